"""The stored H200 run of `profkit profile` on examples/transformer_block.py (jobs/profile.toml):
its groups derive again from its timing export, its top 10 groups are each profiled and explained,
and the headline's figures are the tables' own."""

from __future__ import annotations

import base64
import io
import json
import re

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from stored_runs import PROFILE_EXAMPLE, run_path

from profkit import store
from profkit.cli import cli
from profkit.explain.kernel_family import short_name
from profkit.workload import profile, timing_pass
from profkit.workload.explain import explain_profile
from profkit.workload.op_class import op_class


@pytest.fixture(scope="module")
def run() -> store.Run:
    return store.load(run_path(PROFILE_EXAMPLE))


def test_the_groups_derive_again_from_the_timing_export(run: store.Run) -> None:
    assert run.verified and run.manifest["kind"] == "profile"
    acts, ranges = timing_pass.frames(timing_pass.read_export(run.path / profile.EXPORT))
    region = timing_pass.measure_region(acts, ranges, step_range="step", steps=3)
    assert (region.steps_seen, region.steps_skipped, region.steps_measured) == (8, 5, 3)
    assert region.host_gap_pct == pytest.approx(run.manifest["region"]["host_gap_pct"], abs=1e-3)
    table, samples = timing_pass.groups(region, "transformer_block")
    columns = ["case", "launches", "total_ms", "device_p95_ms", "time_share_pct", "rank"]
    pd.testing.assert_frame_equal(run.cases[columns], table[columns], check_dtype=False)
    assert len(run.samples) == len(samples) == run.manifest["region"]["launches"]


def test_the_top_ten_groups_were_profiled_by_launch_order_and_each_is_explained(
    run: store.Run,
) -> None:
    counters = run.manifest["counters"]
    top = list(run.cases.sort_values("rank")["case"].head(10))
    assert counters["status"] == "ok" and sorted(counters["groups"]) == sorted(top)
    assert counters["matched_by"] == "launch order"
    # one launch of each group, and ncu's name for it is its group's kernel's
    kernels = run.kernels.set_index("case")
    assert sorted(kernels.index) == sorted(top)
    names = run.cases.set_index("case")["kernel_name"]
    for case, row in kernels.iterrows():
        assert row["kernel_name"] == short_name(names[case], 10**6)
    report = explain_profile(run)
    assert [f.case for f in report.findings] == top
    assert all(f.bottleneck is not None for f in report.findings)


def test_the_headline_says_what_the_tables_hold(run: store.Run) -> None:
    """Its figures from the run's own files: the pace pass's step opens (pace.json, the program
    run alone), the region's GPU busy time and each op class's kernel time over the 3 steps; the
    table below it holds every class's."""
    region = run.manifest["region"]
    opens_ms = [t / 1e6 for t in json.loads((run.path / "pace.json").read_text())["opens_ns"]]
    assert len(opens_ms) == region["steps_seen"] == 8 and region["steps_measured"] == 3
    step = (opens_ms[7] - opens_ms[5]) / 2  # the measured steps' intervals
    busy = region["busy_ms"] / 3
    idle = 100 * (1 - busy / step)
    cases = run.cases.assign(cls=[str(op_class(r)) for r in run.cases.to_dict("records")])
    share = 100 * cases.groupby("cls")["total_ms"].sum() / 3 / step
    per_step = cases.groupby("cls")["launches_per_step"].sum()
    assert idle > share.max()  # the GPU idles more of the step than any class of kernel runs
    profiled_idle = run.manifest["pace"]["profiled_gpu_idle_pct"]
    assert idle < profiled_idle - 10  # torch.profiler's own host cost: 56% idle under it
    headline, *table = explain_profile(run).notes["transformer_block"].split("\n")
    assert headline.startswith(
        f"The GPU is idle {idle:.0f}% of the step (host gaps; {profiled_idle:.0f}% under the "
        "profiler): cut the host"
    )
    mm = (
        f"{share['matmul']:.0f}% is in {per_step['matmul']:.0f} matmul launches per step (9 groups)"
    )
    assert f"; {mm} at 89% Tensor (7 of them profiled)" in headline
    elementwise = f"{share['elementwise']:.0f}% is in {per_step['elementwise']:.0f} elementwise"
    assert f"; the next {elementwise} launches per step (19 groups) at 76% DRAM" in headline
    assert f"A step takes {step:.3f} ms run alone" in headline
    c = run.manifest["counters"]
    assert headline.endswith(
        f"Counter pass: ncu profiled {c['kernels_profiled']} launches for the top 10 groups "
        f"({c['passes']} passes) in {c['wall_s']:.1f} s, "
        f"{c['wall_s'] / run.manifest['pace']['child_wall_s']:.2f}x the program run plainly in "
        f"the pace pass ({run.manifest['pace']['child_wall_s']:.1f} s)."
    )
    rows = {r.split("  ")[1].strip(): r.split()[-4:] for r in table[1:-1]}
    assert list(rows) == list(share.sort_values(ascending=False).index)
    for cls, (pct, ms, launches, groups) in rows.items():
        assert pct == f"{share[cls]:.1f}%" and launches == f"{per_step[cls]:.0f}"
        assert ms == f"{cases[cases['cls'] == cls]['total_ms'].sum() / 3:.3f}"
        assert int(groups) == (cases["cls"] == cls).sum()
    assert table[-1].split()[-1] == f"{idle:.1f}%"


def test_show_explain_and_compare_read_the_example(run: store.Run) -> None:
    runner = CliRunner()
    shown = runner.invoke(cli, ["show", str(run.path), "--format", "csv"])
    assert shown.exit_code == 0
    assert len(pd.read_csv(io.StringIO(shown.output))) == len(run.cases)
    explained = runner.invoke(cli, ["explain", str(run.path), "--format", "json"])
    assert explained.exit_code == 0 and len(json.loads(explained.output)["findings"]) == 10
    assert runner.invoke(cli, ["compare", str(run.path), str(run.path)]).exit_code == 0


def test_the_readme_shows_the_top_of_what_explain_prints_on_the_example(run: store.Run) -> None:
    readme = (run_path(PROFILE_EXAMPLE).parents[3] / "README.md").read_text()
    body = readme.split("## Profile your own program\n", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```text\n(.*?)```", body, re.S)
    args = ["explain", "transformer_block", "--profiles", str(run.path.parent)]
    result = CliRunner().invoke(cli, args, env={"COLUMNS": "80"})
    assert result.exit_code == 0
    assert result.stdout.startswith(block)


def test_a_fused_library_op_is_not_told_to_fuse_away(run: store.Run) -> None:
    # cuDNN's attention backward is a whole op fused already: its advice is what it is given or
    # another backend, not "fuse it away"; an ATen elementwise kernel still gets "fuse it away"
    from profkit.explain import Action
    from profkit.explain.phrases import advice_text, reason_text

    findings = {f.case: f for f in explain_profile(run).findings}
    cudnn = [f for c, f in findings.items() if "cudnn" in c and f.next]
    aten = [f for c, f in findings.items() if "vectorized_elementwise" in c and f.next]
    assert cudnn and aten
    for f in cudnn:
        assert Action.FUSE not in [s.action for s in f.next]
        assert "another backend" in advice_text(f.next[0])
        # nor called a GEMM: its Tensor Cores' 37% is said of the fused op it is
        said = " ".join(reason_text(r, f.evidence) for r in f.reasons)
        assert "GEMM" not in said and "A cudnn kernel that fuses a whole op, with the" in said
    assert all(f.next[0].action == Action.FUSE for f in aten)


def test_the_page_draws_one_counter_row_per_profiled_group_in_rank_order(run: store.Run) -> None:
    """The counters view of a profile: a bar per profiled group (the top 10) in each panel, in
    the groups chart's order, not the capture's per-case panels (a trace per group, 1 MB)."""
    from profkit.workload.dashboard import profile_sections

    counters = dict(profile_sections(run, "run0"))["Hardware counters"]
    assert "of the 51 groups" in counters and "10 of" in counters
    data = json.loads(re.search(r'newPlot\("run0-plot-counters",(\[.*?\]),\{', counters)[1])
    assert [t["name"] for t in data] == [
        "DRAM throughput", "SM throughput", "Tensor pipe", "achieved occupancy",
    ]  # fmt: skip
    top10 = run.cases.sort_values("rank")["variant"].head(10).tolist()
    for trace in data:  # plotly draws the first category at the bottom; rank, then label
        assert [y.split(". ", 1)[0] for y in trace["y"]] == [str(r) for r in range(10, 0, -1)]
        assert [c[2] for c in trace["customdata"]] == top10[::-1]  # the whole label, for hover
        assert all(len(y.split(". ", 1)[1]) <= 56 for y in trace["y"])
    x = data[2]["x"]  # plotly sends numbers as base64 arrays
    tensor = np.frombuffer(base64.b64decode(x["bdata"]), x["dtype"])[::-1]
    assert tensor[0] > 80  # the top group, a cuBLAS GEMM, keeps its Tensor pipe busy
    assert tensor[top10.index("vectorized_elementwise_kernel(mul)@backward.2")] == 0
