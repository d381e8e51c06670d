"""capture --cluster on the CPU: a LocalCluster of 2 worker processes runs --interpret sweeps.

The merged run must equal a single-process run case for case; a worker killed mid-group must
still give a complete run that names the retried group; an unreachable scheduler is one line.
"""

from __future__ import annotations

import os

os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported (workers inherit it too)

import socket  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from click.testing import CliRunner  # noqa: E402

from profkit import store  # noqa: E402
from profkit.capture import CaptureOptions  # noqa: E402
from profkit.cli import cli  # noqa: E402
from profkit.spec import find_spec  # noqa: E402

distributed = pytest.importorskip("distributed")
from profkit import cluster  # noqa: E402

CORRECTNESS = ["case", "kernel", "variant", "dtype", "shape", "correct", "rel_err", "max_abs_err"]
ROOT = Path(__file__).resolve().parents[1]


def opts(spec, root: Path, shapes, dtypes=None, **more) -> CaptureOptions:
    return CaptureOptions(
        dtypes=dtypes or spec.dtypes[:2],
        shapes=shapes,
        variants=tuple(v.name for v in spec.variants),
        root=root,
        interpret=True,
        **more,
    )


def test_groups_are_one_dtype_and_shape_with_the_sweeps_seeds(tmp_path: Path) -> None:
    spec = find_spec("vector_add")
    o = opts(spec, tmp_path, ((1000,), (257,)))
    groups = cluster.split(spec, o)
    assert [g.name for g in groups] == [
        "vector_add/float32/1000", "vector_add/float32/257",
        "vector_add/float16/1000", "vector_add/float16/257",
    ]  # fmt: skip
    n = len(o.variants)
    assert [g.opts.case_offset for g in groups] == [0, n, 2 * n, 3 * n]
    assert all(g.opts.variants == o.variants for g in groups)


@pytest.fixture(scope="module")
def address():
    """One LocalCluster of 2 worker processes (127.0.0.1, TRITON_INTERPRET=1) for the module: a
    worker's first import of torch costs seconds here, so the tests share the workers."""
    local = cluster.local_cluster(2, interpret=True)
    yield local.scheduler_address
    local.close()


def test_two_workers_two_kernels_equal_the_single_process_runs(
    tmp_path: Path, address: str
) -> None:
    sweep = ["--interpret", "--dtype", "float32", "--shape", "1000", "--shape", "257"]
    merged = CliRunner().invoke(
        cli, ["capture", "vector_add", "sum", *sweep, "--out", tmp_path / "c", "--cluster", address]
    )
    assert merged.exit_code == 0, (merged.output, merged.exception)
    plain = CliRunner().invoke(
        cli, ["capture", "vector_add", "sum", *sweep, "--out", tmp_path / "p"]
    )
    assert plain.exit_code == 0, plain.output
    runs = {p.name.split("-")[0]: store.load(p) for p in (tmp_path / "c").iterdir()}
    singles = {p.name.split("-")[0]: store.load(p) for p in (tmp_path / "p").iterdir()}
    assert sorted(runs) == sorted(singles) == ["sum", "vector_add"]
    for kernel, run in runs.items():
        got = run.cases[CORRECTNESS].reset_index(drop=True)
        want = singles[kernel].cases[CORRECTNESS].reset_index(drop=True)
        assert len(got) == len(singles[kernel].cases) > 2
        pd.testing.assert_frame_equal(got, want)
        # where each case ran, and which worker ran which group
        assert set(run.cases.gpu) == {"none (interpret)"} and run.cases.host.notna().all()
        block = run.manifest["cluster"]
        ran = [g for w in block["workers"].values() for g in w["groups"]]
        assert sorted(ran) == sorted(block["groups"]) == sorted(set(run.cases.group))
        assert len(block["groups"]) == 2 and block["retried"] == []
        assert run.manifest["kernel"] == kernel and run.interpret
    assert "GPU" in merged.output  # the column show prints for a run spread over a cluster


def test_tune_spreads_a_rounds_configurations_over_the_workers(
    tmp_path: Path, address: str
) -> None:
    """profkit tune --cluster: each configuration its own group, the round merged into one run."""
    args = ["tune", "rmsnorm", "--interpret", "--shape", "2x64", "--set", "BLOCK_N=1024"]
    args += ["--set", "ROWS=1,2", "--set", "num_warps=4", "--cluster", address]
    result = CliRunner().invoke(cli, [*args, "--out", tmp_path])
    assert result.exit_code == 0, (result.output, result.exception)
    run = store.load(store.list_runs(tmp_path)[-1])
    assert run.manifest["kind"] == "tune" and run.cases.correct.all() and len(run.cases) == 4
    assert set(run.cases.group.str.rsplit("/", n=1).str[-1]) == set(run.cases.variant)


DIES_ONCE = """
import os
import torch
from profkit.spec import KernelSpec, Variant

MARK = {mark!r}


def double(inputs):
    return inputs["x"] * 2


def dies_once(inputs):
    # the first call of the float16 group takes its worker process down, as a crash would
    if inputs["x"].dtype == torch.float16 and not os.path.exists(MARK):
        open(MARK, "w").close()
        os._exit(3)
    return inputs["x"] * 2


def make_inputs(shape, dtype, device, generator):
    return {{"x": torch.randn(shape, generator=generator).to(getattr(torch, dtype))}}


FRAGILE = KernelSpec(
    name="fragile", description="y = 2 x",
    variants=(Variant("dies_once", dies_once), Variant("torch", double, baseline=True)),
    make_inputs=make_inputs, reference=lambda i: i["x"].double() * 2,
    dtypes=("float32", "float16"), shapes=((64,),),
    tolerances={{"float32": (1e-6, 1e-6), "float16": (1e-3, 1e-3)}},
    bytes_moved=lambda s, e: 2 * s[0] * e, flops=lambda s: s[0], interpret_shapes=((64,),),
)
"""


def test_a_worker_killed_mid_group_still_gives_a_complete_run(tmp_path: Path, address: str) -> None:
    spec_file = tmp_path / "fragile.py"
    spec_file.write_text(DIES_ONCE.format(mark=str(tmp_path / "died")))
    spec = find_spec("fragile", spec_file)
    o = opts(spec, tmp_path / "runs", ((64,), (32,)), from_file=str(spec_file))
    [path] = cluster.run_cluster_capture([(spec, o)], address)
    assert (tmp_path / "died").exists()  # the worker did die
    run = store.load(path)
    assert len(run.cases) == 8 and run.cases.correct.astype(bool).all()
    # the float16 group that ran first took its worker down and ran again elsewhere
    # (every group assigned to the dying worker counts as died mid-group: with two groups
    # queued there, both are retried; whichever ran first is a float16 one)
    retried = run.manifest["cluster"]["retried"]
    died = [r for r in retried if "died mid-group" in r["why"][0]]
    assert any(d["group"].startswith("fragile/float16/") for d in died)
    for d in died:
        assert d["attempts"] >= 2
        assert d["group"] in run.manifest["cluster"]["workers"][d["kept"]]["groups"]
    # a group whose result was in before its worker died is never measured over again
    for other in retried:
        if other not in died:
            assert all("first result is kept" in why for why in other["why"]), other


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_scheduler_is_one_line(tmp_path: Path) -> None:
    env = {"DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "2s"}
    address = f"tcp://127.0.0.1:{_closed_port()}"
    args = ["capture", "vector_add", "--interpret", "--shape", "100", "--out", str(tmp_path)]
    import dask

    with dask.config.set({"distributed.comm.timeouts.connect": "2s"}):
        result = CliRunner().invoke(cli, [*args, "--cluster", address], env=env)
    assert result.exit_code == 1, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert lines[-1].startswith(f"error: cannot reach the Dask scheduler at {address}")
    assert "Traceback" not in result.output and not list(tmp_path.iterdir())
    bad = CliRunner().invoke(cli, [*args, "--cluster", "http://x"])
    assert bad.exit_code == 1 and "give 'local' or a scheduler address" in bad.output


def test_a_plain_capture_never_imports_dask(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from profkit.cli import cli\n"
        f"r = CliRunner().invoke(cli, ['capture', 'vector_add', '--interpret', '--shape', '100',"
        f" '--variant', 'torch', '--out', {str(tmp_path)!r}])\n"
        "assert r.exit_code == 0, r.output\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"
    assert len(list(tmp_path.iterdir())) == 1  # the run was stored


def _result(group: str, status: str) -> dict:
    return {"group": group, "counters": {"status": status, "reason": "why " + status}}


def test_groups_without_counter_permission_are_marked_timing_only() -> None:
    o = None
    mixed = cluster._counters_block([_result("k/a", "ok"), _result("k/b", "timing_only")], o)
    assert mixed["status"] == "ok" and mixed["timing_only_groups"] == ["k/b"]
    assert mixed["groups"]["k/b"]["reason"] == "why timing_only"
    none = cluster._counters_block([_result("k/a", "timing_only")], o)
    assert none["status"] == "timing_only" and list(none["groups"]) == ["k/a"]


def test_explain_and_the_dashboard_read_a_cluster_run_with_its_gpu(
    tmp_path: Path, address: str
) -> None:
    from profkit import explain
    from profkit.dashboard import findings_view

    spec = find_spec("vector_add")
    [path] = cluster.run_cluster_capture([(spec, opts(spec, tmp_path, ((300,),)))], address)
    for args in (["explain", path], ["dashboard", path, "--out", tmp_path / "d.html"]):
        result = CliRunner().invoke(cli, [str(a) for a in args])
        assert result.exit_code == 0, (args, result.output)
    # an interpret run has no per-case findings: a stored H200 run, its cases given two GPU
    # models as a mixed cluster would record them; the findings table shows the GPU
    run = store.load(store.resolve("rmsnorm", ROOT / "tests" / "data" / "runs"))
    run.cases["gpu"] = ["NVIDIA H200", "NVIDIA H100"] * (len(run.cases) // 2) + ["NVIDIA H200"] * (
        len(run.cases) % 2
    )
    report = explain.explain_run(run)
    rows = findings_view.finding_rows(run, [*report.verdicts, *report.findings])
    html = findings_view.findings_table(rows)
    assert "<th>GPU</th>" in html and "data-key='gpu'" in html
    assert {r["gpu"] for r in rows if r["dtype"]} == {"NVIDIA H200", "NVIDIA H100"}
    plain = findings_view.findings_table([r | {"gpu": ""} for r in rows])
    assert "<th>GPU</th>" not in plain  # a one-GPU run's page is as before


def test_ctrl_c_stops_the_sweep_and_stores_nothing(
    tmp_path: Path, address: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupt(*_):
        raise KeyboardInterrupt

    monkeypatch.setattr(cluster, "_view", interrupt)
    spec = find_spec("vector_add")
    o = opts(spec, tmp_path / "runs", ((1000,), (257,)))
    with pytest.raises(KeyboardInterrupt):
        cluster.run_cluster_capture([(spec, o)], address)
    assert not (tmp_path / "runs").exists() or not list((tmp_path / "runs").iterdir())
    # the groups were cancelled: nothing of this sweep is left on the scheduler
    left = distributed.Client(address).run_on_scheduler(
        lambda dask_scheduler: [k for k in dask_scheduler.tasks if "vector_add" in str(k)]
    )
    assert left == []
