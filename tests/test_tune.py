"""profkit tune: tunables in a spec, the grid and its names, explain's steps as parameter moves,
the loop (its capture and explain replaced by a model of a kernel), the stored run of kind tune."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from profkit import store
from profkit.explain import Action, Advice, Cause, Finding, FindingKind, Reason
from profkit.spec import Variant, tunables_problem
from profkit.tune import loop, steps, why
from profkit.tune.space import Space

VALUES = {"BLOCK": (256, 512, 1024), "num_warps": (2, 4, 8), "num_stages": (1, 2, 3)}
SHIPPED = {"BLOCK": 512, "num_warps": 4, "num_stages": 1}


def _variant(**kw) -> Variant:
    base = dict(tunables=VALUES, configure=lambda p: lambda i: i, shipped=lambda s, d: SHIPPED)
    return Variant("v", lambda i: i, **{**base, **kw})


def test_tunables_are_validated():
    assert tunables_problem(_variant()) is None
    assert tunables_problem(Variant("v", lambda i: i)) is None
    assert "non-empty tuple" in tunables_problem(_variant(tunables={"BLOCK": []}))
    assert "repeats" in tunables_problem(_variant(tunables={"BLOCK": (1, 1)}))
    assert "configure" in tunables_problem(_variant(configure=None))
    assert "identifier" in tunables_problem(_variant(tunables={"a b": (1,)}))


def test_space_names_round_trip_and_shipped_joins_the_grid():
    space = Space("k", "v", dict(VALUES), SHIPPED)
    assert space.size == 27 and len(space.grid()) == 27
    for p in space.grid():
        assert space.params(space.name(p)) == p
    assert space.name(SHIPPED) == "g012"  # (1 * 3 + 1) * 3 + 0


def _finding(reasons, actions) -> Finding:
    return Finding(
        "x",
        FindingKind.CASE,
        "k",
        variant="g012",
        reasons=[Reason(c) for c in reasons],
        next=[Advice(a, detail={"gain_us": 3.0}) for a in actions],
    )


def test_a_step_becomes_one_move_per_parameter_of_its_role():
    f = _finding([Cause.MEMORY_LATENCY], [Action.BYTES_IN_FLIGHT, Action.LIBRARY_SHAPES])
    props, idle = steps.propose(VALUES, SHIPPED, "g012", f)
    moves = [p.move for p in props]
    assert moves == ["num_stages 1 -> 2", "BLOCK 512 -> 1024", "num_warps 4 -> 2"]
    assert {p.cause for p in props} == {"memory_latency"}
    assert idle == {"library_shapes": "no tunable parameter"}
    # at the edge of a parameter's values there is no move that way, and the round says so
    props, idle = steps.propose(
        VALUES,
        {**SHIPPED, "num_warps": 8},
        "g",
        _finding([Cause.REGISTER_SPILLS], [Action.CUT_SPILLS]),
    )
    assert [p.move for p in props] == ["BLOCK 512 -> 256"]
    top = {"BLOCK": 1024, "num_warps": 4, "num_stages": 3}
    props, idle = steps.propose(VALUES, top, "g", _finding([Cause.STALL], [Action.DEEPER_PIPELINE]))
    assert not props and idle == {"deeper_pipeline": "num_stages at its largest"}


# a model kernel: stages help up to 3, BLOCK 1024 is best, warps 4; the "explain" of a config
# points to what would help it
def _model_ms(p: dict) -> float:
    return 0.1 * (
        1
        + 0.2 * (3 - p["num_stages"])
        + 0.15 * abs(np.log2(p["BLOCK"] / 1024))
        + 0.1 * abs(np.log2(p["num_warps"] / 4))
    )


def _fake_capture(space, names, opts, work, console):
    rows, samples = [], []
    rng = np.random.default_rng(len(names))
    for n in names:
        ms = _model_ms(space.params(n))
        case = f"k.{n}.float16.64x64"
        rows.append(
            dict(
                kernel="k",
                variant=n,
                baseline=False,
                dtype="float16",
                shape="64x64",
                case=case,
                correct=True,
                device_p50_ms=ms,
                stall_long_scoreboard_pct=60 - 10 * space.params(n)["num_stages"],
                registers_per_thread=32,
            )
        )
        samples += [(case, "device", ms * (1 + 0.002 * e)) for e in rng.standard_normal(60)]
    manifest = {"run_id": f"r{len(names)}", "counters": {"status": "ok"}, "timing": {}}
    return store.Run(
        work,
        manifest,
        pd.DataFrame(rows),
        None,
        None,
        pd.DataFrame(samples, columns=["case", "kind", "ms"]),
    )


def _fake_finding(m):
    p = m.params
    actions = []
    if p["num_stages"] < 3:
        actions.append(Action.BYTES_IN_FLIGHT)
    if p["BLOCK"] != 1024:
        actions.append(Action.MORE_PROGRAMS if p["BLOCK"] > 1024 else Action.ILP)
    if not actions:  # as explain words a gain under the practical floor
        f = _finding([Cause.AT_ROOF], [])
        f.next = [Advice(Action.FEWER_BYTES, ["headroom_us"], {"under_floor": True})]
        return f
    return _finding([Cause.MEMORY_LATENCY], actions)


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setattr(loop, "_capture", _fake_capture)
    monkeypatch.setattr(loop, "_finding", _fake_finding)


def _tune(tmp_path, shipped=SHIPPED, budget=8):
    space = Space("k", "v", dict(VALUES), shipped)
    opts = loop.TuneOptions(dtype="float16", shape=(64, 64), root=tmp_path, budget=budget)
    spec = type("S", (), {"name": "k", "source": ""})()
    path = loop.run_tune(spec, space, opts)
    run = store.load(path)
    return space, run, loop.tune_record(run)


def test_the_loop_follows_the_steps_to_the_best_and_stores_a_tune_run(fake, tmp_path):
    space, run, rec = _tune(tmp_path)
    assert run.manifest["kind"] == store.TUNE and rec["measured"] == len(run.cases) <= 8
    best = min(space.grid(), key=_model_ms)
    assert rec["winner"] == space.name(best)
    # every configuration but the shipped one names the step and the configuration behind it
    steps_ = run.cases.set_index("variant")
    assert steps_.loc["g012", "action"] == "shipped"
    others = steps_.drop(index="g012")
    assert others.proposed_from.isin(steps_.index).all() and others.action.ne("shipped").all()
    assert "long-scoreboard stalls 50% of stalls -> 30% of stalls" in rec["why"]
    assert rec["against_shipped"]["outcome"] == "faster"
    assert not any(p.name.startswith(".tune-") for p in tmp_path.iterdir())


def test_a_shipped_best_stops_after_one_round(fake, tmp_path):
    best = {"BLOCK": 1024, "num_warps": 4, "num_stages": 3}
    space, run, rec = _tune(tmp_path, shipped=best)
    assert len(rec["rounds"]) == 1 and rec["shipped_is_best"] and rec["measured"] == 1
    assert "no step clears the practical floor" in rec["stop"]


def test_the_budget_caps_configurations(fake, tmp_path):
    _, run, rec = _tune(tmp_path, budget=3)
    assert rec["measured"] == 3 and "budget" in rec["stop"]


@pytest.mark.interpret
def test_tune_interpret_checks_a_small_grid(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from profkit.cli import cli

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    args = ["tune", "rmsnorm", "--interpret", "--shape", "3x100", "--out", str(tmp_path)]
    args += ["--set", "BLOCK_N=1024", "--set", "ROWS=1,2", "--set", "num_warps=4,8"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    run = store.load(store.list_runs(tmp_path)[-1])
    assert run.manifest["kind"] == store.TUNE and run.interpret
    # the shipped BLOCK_N at 100 columns (128) joins the grid: 2 x 2 x 2
    assert json.loads((run.path / "tune.json").read_text())["space"]["added"] == ["BLOCK_N"]
    assert len(run.cases) == 8 and run.cases.correct.all()
    assert sorted(run.cases.action)[-1] == "shipped" and (run.cases.action == "grid").sum() == 7
    assert "stopped: interpret mode" in result.output


@pytest.mark.interpret
@pytest.mark.parametrize(
    "kernel, shape, sets, n",
    [
        # the shipped 2 warps of a short row join the grid
        ("softmax", "3x100", ["ROWS=1,2", "num_warps=4"], 4),
        # the shipped decode tile at M = 64 (BN 64, 8 stages) joins the grid
        ("matmul", "64x64x64", ["BM=64", "BN=128", "BK=64", "num_stages=3", "num_warps=4"], 4),
    ],
)
def test_the_labs_other_tunables_are_correct_under_the_interpreter(
    tmp_path, monkeypatch, kernel, shape, sets, n
):
    from click.testing import CliRunner

    from profkit.cli import cli

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    args = ["tune", kernel, "--interpret", "--shape", shape, "--out", str(tmp_path)]
    result = CliRunner().invoke(cli, [*args, *(a for s in sets for a in ("--set", s))])
    assert result.exit_code == 0, result.output
    run = store.load(store.list_runs(tmp_path)[-1])
    assert len(run.cases) == n and run.cases.correct.all()


def test_bad_input_is_one_line(tmp_path):
    from click.testing import CliRunner
    from conftest import one_line_error

    from profkit.cli import cli

    for args, words in [
        (["tune", "rmsnorm", "--set", "BLOCK_N=3"], ("--set BLOCK_N", "not among")),
        (["tune", "rmsnorm", "--set", "nope=1"], ("no tunable 'nope'",)),
        (["tune", "rmsnorm", "--variant", "eager"], ("declares no tunables",)),
        (["tune", "softmax", "--shape", "256x65536", "--interpret"], ("split-row design",)),
        # the shape is checked as capture checks it, before the first line of work is printed
        (["tune", "rmsnorm", "--shape", "2x8x4", "--interpret"], ("(3-D)", "2-D shapes")),
    ]:
        one_line_error(CliRunner().invoke(cli, [*args, "--out", str(tmp_path)]), *words)


def test_without_counters_the_loop_stops_and_says_why(fake, tmp_path, monkeypatch):
    def timing_only(*args):
        run = _fake_capture(*args)
        run.manifest["counters"] = {"status": "timing_only", "reason": "ERR_NVGPUCTRPERM"}
        return run

    monkeypatch.setattr(loop, "_capture", timing_only)
    _, run, rec = _tune(tmp_path)
    assert rec["measured"] == 1 and rec["stop"] == "g012: no counters to explain (ERR_NVGPUCTRPERM)"


def test_the_counters_quoted_are_those_past_explains_margins_the_steps_causes_first():
    shipped = pd.Series(
        dict(stall_wait_pct=40.0, stall_barrier_pct=10.0, achieved_occupancy_pct=30.0,
             registers_per_thread=168, grid_size=1024, tensor_pipe_pct=50.0)
    )  # fmt: skip
    winner = pd.Series(
        dict(stall_wait_pct=12.0, stall_barrier_pct=13.0, achieved_occupancy_pct=60.0,
             registers_per_thread=128, grid_size=1024, tensor_pipe_pct=58.0)
    )  # fmt: skip
    moved = why.changed(winner, shipped, ["stall_wait_pct", "tensor_underfed"])
    # barrier +3 points and tensor +8 stay under the margins (5, 10), the grid did not move
    assert [c["counter"] for c in moved] == [
        "stall_wait_pct",
        "achieved_occupancy_pct",
        "registers_per_thread",
    ]
    assert why.phrase(moved[0]) == "fixed-latency wait stalls 40% of stalls -> 12% of stalls"
    assert why.phrase(moved[2]) == "1.3x fewer registers per thread (168 -> 128)"


def test_explain_reads_a_tune_run_by_its_name(fake, tmp_path):
    from click.testing import CliRunner

    from profkit.cli import cli

    space, run, rec = _tune(tmp_path)
    assert run.manifest["kernel"] == "k.tune" and run.manifest["tuned_kernel"] == "k"
    said = CliRunner().invoke(cli, ["explain", "k.tune", "--profiles", str(tmp_path)])
    assert said.exit_code == 0, said.output
    lines = said.output.splitlines()
    assert lines[0].startswith(f"tune {run.run_id}: k v") and "[shipped]" in lines[1]
    assert f"winner {rec['winner']}: " in said.output
    # every other configuration against the shipped one, by the stats module's interval
    won = next(line for line in lines if line.startswith(f"  r4 {rec['winner']}"))
    assert "0.645x shipped (faster)" in won
    out = CliRunner().invoke(
        cli, ["explain", "k.tune", "--profiles", str(tmp_path), "--format", "json"]
    )
    assert json.loads(out.output)["tune"]["winner"] == rec["winner"]


# the job's tune runs on the H200 (jobs/tune.toml, 2026-12-04; tables only). They mark the shipped
# configuration `baseline` (the code then did; no test here reads the flag)
H200 = Path(__file__).parent / "data" / "tune_runs"
MATMUL_TUNE = "matmul.tune-20261204-152231-vm-94862c"


def _h200(run_id: str) -> tuple[store.Run, dict, Space]:
    run = store.load(H200 / run_id)
    rec = loop.tune_record(run)
    sp = rec["space"]
    values = {k: tuple(v) for k, v in sp["values"].items()}
    return run, rec, Space(sp["kernel"], sp["variant"], values, sp["shipped"])


def test_the_h200_matmul_tune_run_is_explained_step_by_step():
    run, rec, space = _h200(MATMUL_TUNE)
    assert run.verified and rec["measured"] == len(run.cases) == 3 <= space.size // 4
    rows = run.cases.set_index("variant")
    assert rows.loc["g045", "action"] == "shipped" and rec["shipped"] == "g045"
    proposed = rows.drop(index="g045")
    assert set(proposed.proposed_from) == {"g045"}
    assert dict(zip(proposed.move, proposed.action, strict=True)) == {
        "num_stages 3 -> 4": "feed_tensor",
        "num_warps 8 -> 4": "ilp",
    }
    # recomputed from the stored tables by this checkout's why
    got = why.winner(space, run.cases, run.samples)
    assert got["winner"] == "g047" and got["against_shipped"]["outcome"] == "faster"
    assert got["counters"][0]["counter"] == "tensor_pipe_pct"  # the cause its step answered
    assert "4 stages keep 3 tiles' loads in flight ahead of the math" in got["why"]
    assert got["vs_shipped"]["g044"]["outcome"] == "slower"


@pytest.mark.parametrize(
    "run_id", ["rmsnorm.tune-20261204-152052-vm-c48ccf", "softmax.tune-20261204-152145-vm-80e3b4"]
)
def test_a_shipped_configuration_at_the_roof_stops_after_one_round(run_id):
    run, rec, space = _h200(run_id)
    assert len(rec["rounds"]) == 1 and rec["measured"] == 1 and rec["shipped_is_best"]
    assert rec["rounds"][0]["steps"] == [{"action": "fewer_bytes", "gain_us": None}]


OWN_SPEC = """
import torch
from profkit.spec import KernelSpec, Variant


def configure(params):
    return lambda i: i["x"] * params["SCALE"]  # SCALE 2 is wrong on purpose


SPEC = KernelSpec(
    name="own", description="y = x",
    variants=(Variant("torch", lambda i: i["x"], tunables={"SCALE": (1, 2)},
                      configure=configure, shipped=lambda shape, dtype: {"SCALE": 1}),),
    make_inputs=lambda s, d, dev, g: {"x": torch.randn(s, generator=g, device=dev)},
    reference=lambda i: i["x"].double(), dtypes=("float32",), shapes=((8,),),
    tolerances={"float32": (1e-6, 1e-6)}, bytes_moved=lambda s, e: 2 * s[0] * e,
    flops=lambda s: 0, interpret_shapes=((8,),),
)
"""


def test_a_wrong_configuration_of_your_own_spec_is_stored_and_fails_the_exit_status(tmp_path):
    from click.testing import CliRunner

    from profkit.cli import cli

    path = tmp_path / "own.py"
    path.write_text(OWN_SPEC)
    args = ["tune", "own", "--from", str(path), "--interpret", "--out", str(tmp_path / "runs")]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 3, result.output  # exitcodes.INCORRECT
    assert "1 of 2 case(s) incorrect" in result.stderr and "own.g001.float32.8" in result.stderr
    run = store.load(store.list_runs(tmp_path / "runs")[-1])
    assert run.manifest["kernel"] == "own.tune" and list(run.cases.correct) == [True, False]
