"""profkit explain (and compare) on the committed H200 RMSNorm runs and committed reports.

What the findings say must follow from the stored tables: the expected per-launch split, re-reads,
history and verdict tallies are computed here from cases.csv and kernels.csv, not by explain.
"""

from __future__ import annotations

import io
import math
import re
from functools import cache
from pathlib import Path

import pandas as pd
import pytest
from rich.console import Console
from stored_runs import run_path

from profkit import compare, stats, store
from profkit import thresholds as th
from profkit.counters.ncu_rep import read_report
from profkit.explain import (
    Action,
    Bottleneck,
    Cause,
    Finding,
    FindingKind,
    Unit,
    Verdict,
    explain_launches,
    explain_run,
)
from profkit.explain.history import notebook_ruled_out
from profkit.explain.phrases import advice_text, finding_text, first_advice_text
from profkit.explain.render import render_terminal
from profkit.lab import lab_dir

ROOT = Path(__file__).parents[1]
OLDER, NEWEST = "rmsnorm-20261130-014110-vm-83a4", "rmsnorm-20261130-014917-vm-4bc5"
RUNS = (OLDER, NEWEST)
LAB = "triton"  # the lab's fused kernel; eager, native and compile are the baselines
LARGEST = "16384x8192"
SM_COUNT = 132  # the H200's, as both manifests record
ELEMENTWISE_FAMILIES = {"aten_elementwise", "aten_reduce", "aten_norm", "inductor", "triton"}
TENSOR_ACTIONS = {Action.USE_TENSOR_CORES, Action.FEED_TENSOR, Action.USE_TF32}


@cache
def report(run_id: str):
    return explain_run(store.load(run_path(run_id)))


def findings(run_id: str) -> tuple[Finding, ...]:
    return tuple(report(run_id))


@cache
def cases(run_id: str) -> pd.DataFrame:
    return store.load(run_path(run_id)).cases


@cache
def kernels(run_id: str) -> pd.DataFrame:
    return store.load(run_path(run_id)).kernels


def row(run_id: str, variant: str, dtype: str, shape: str) -> pd.Series:
    df = cases(run_id)
    (index,) = df.index[(df.variant == variant) & (df["dtype"] == dtype) & (df["shape"] == shape)]
    return df.loc[index]


def case_finding(run_id: str, variant: str, dtype: str, shape: str) -> Finding:
    subject = f"rmsnorm {variant} {dtype} {shape}"
    (f,) = [f for f in findings(run_id) if f.kind == FindingKind.CASE and f.subject == subject]
    return f


def verdict(run_id: str) -> Finding:
    (v,) = [f for f in findings(run_id) if f.kind == FindingKind.VERDICT]
    return v


def sol(memory: float, sm: float) -> str:
    """Nsight Compute's SOLBottleneck rule, written out here from its thresholds (80/60/10)."""
    if memory >= 80 or sm >= 80:
        return "compute" if sm >= memory else "memory"
    if memory < 60 and sm < 60:
        return "latency"
    if round(abs(sm - memory), 6) >= 10:
        return "compute" if sm > memory else "memory"
    return "balanced"


# --- per launch: an eager chain judged by where its time goes ------------------------------------


@pytest.mark.parametrize("run_id", RUNS)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_eager_chain_is_split_by_launch_not_averaged(run_id: str, dtype: str) -> None:
    f = case_finding(run_id, "eager", dtype, LARGEST)
    k = kernels(run_id)
    rows = k[k.case == f.case].sort_values("launch")
    assert len(f.launches) == len(rows) == int(row(run_id, "eager", dtype, LARGEST).kernel_count)
    total = rows.ncu_duration_ms.sum()
    groups: dict[str, list] = {}
    for launch, r in zip(f.launches, rows.itertuples(), strict=True):
        assert launch.launch == r.launch and launch.name == r.kernel_name
        assert launch.share_pct == pytest.approx(r.ncu_duration_ms / total * 100)
        expected = sol(r.memory_throughput_pct, r.sm_throughput_pct)
        assert launch.bottleneck == Bottleneck(expected)
        assert launch.family.startswith("aten_")
        groups.setdefault(expected, []).append(r)
    top = max(groups, key=lambda g: sum(r.ncu_duration_ms for r in groups[g]))
    assert f.bottleneck == Bottleneck(top)  # where the time goes, never the weighted mean
    memory = groups.get("memory", [])
    if memory:
        share = sum(r.ncu_duration_ms for r in memory) / total * 100
        lo = min(r.dram_throughput_pct for r in memory)
        hi = max(r.dram_throughput_pct for r in memory)
        assert f"{share:.1f}% in {len(memory)} memory-bound launch" in finding_text(f)
        assert f"at {lo:.0f}-{hi:.0f}% DRAM" in finding_text(
            f
        ) or f"at {lo:.0f}% DRAM" in finding_text(f)
    assert [s.action for s in f.next] == [Action.FUSE]
    assert Cause.EXTRA_PASSES in [r.cause for r in f.reasons]


def test_the_issues_eager_example_two_launches_at_87_to_90_pct_dram() -> None:
    f = case_finding(NEWEST, "eager", "float16", LARGEST)
    streaming = [x for x in f.launches if (x.evidence["dram_throughput_pct"] or 0) >= 85]
    assert len(streaming) == 2
    assert all(x.bottleneck == Bottleneck.MEMORY for x in streaming)


# --- the memory hierarchy: reads and writes apart -----------------------------------------------


@pytest.mark.parametrize("run_id", RUNS)
def test_native_re_read_is_found_from_dram_reads(run_id: str) -> None:
    r = row(run_id, "native", "bfloat16", "4096x8192")
    df = cases(run_id)
    same = df[(df["dtype"] == "bfloat16") & (df["shape"] == "4096x8192")]
    floor = same.dram_bytes_read.min()
    f = case_finding(run_id, "native", "bfloat16", "4096x8192")
    assert Cause.EXTRA_READS in [x.cause for x in f.reasons]
    assert f.evidence["dram_bytes_read"] == r.dram_bytes_read
    assert f.evidence["fewest_bytes_read"] == floor
    assert f"It reads {r.dram_bytes_read / 1e6:.1f} MB from DRAM" in finding_text(f)
    assert f"{r.dram_bytes_read / floor:.1f}x the {floor / 1e6:.1f} MB" in finding_text(f)
    if run_id == NEWEST:  # the issue's figures: 99.5 MB against a 67.1 MB input
        assert f"{r.dram_bytes_read / 1e6:.1f}/{floor / 1e6:.1f}" == "99.5/67.1"


@pytest.mark.parametrize("run_id", RUNS)
def test_one_pass_kernels_are_never_called_re_readers(run_id: str) -> None:
    for f in findings(run_id):
        if f.kind == FindingKind.CASE and f.variant in ("triton", "compile"):
            assert Cause.EXTRA_READS not in [x.cause for x in f.reasons], f.subject


@pytest.mark.parametrize("run_id", RUNS)
def test_at_the_copy_roof_only_fewer_bytes_help_judged_against_the_large_copy(run_id: str) -> None:
    # schema-1 runs measured no same-size copy: the large copy is the roof, and that is said
    for r in cases(run_id).itertuples():
        f = case_finding(run_id, r.variant, r.dtype, r.shape)
        at_roof = round(r.pct_peak_bw, 6) >= th.NEAR_COPY_CEILING_PCT and r.kernel_count == 1
        if r.kernel_count == 1 and r.memory_throughput_pct >= 80 > r.sm_throughput_pct:
            assert (Cause.AT_ROOF in [x.cause for x in f.reasons]) is at_roof, f.subject
        if Cause.AT_ROOF in [x.cause for x in f.reasons]:
            assert f.evidence["same_size_roof"] == "unknown"
            assert f.next[0].action in (Action.FEWER_BYTES, Action.FUSE)


@pytest.mark.parametrize("run_id", RUNS)
def test_decode_launches_lead_with_the_grid_and_claim_no_occupancy_problem(run_id: str) -> None:
    df = cases(run_id)
    tiny = df[(df.grid_size < SM_COUNT) & (df.waves_per_sm < 1) & (df.kernel_count == 1)]
    assert len(tiny) >= 12
    for r in tiny.itertuples():
        f = case_finding(run_id, r.variant, r.dtype, r.shape)
        assert f.reasons[0].cause == Cause.SMALL_GRID, f.subject
        assert f.evidence["idle_sms"] == SM_COUNT - int(r.grid_size)
        assert Cause.LOW_OCCUPANCY not in [x.cause for x in f.reasons]


# --- advice that fits the kernel ------------------------------------------------------------------


@pytest.mark.parametrize("run_id", RUNS)
def test_no_elementwise_kernel_is_sent_to_the_tensor_cores(run_id: str) -> None:
    for f in findings(run_id):
        assert not TENSOR_ACTIONS & {s.action for s in f.next}, f.subject
        for launch in f.launches:
            assert launch.family in ELEMENTWISE_FAMILIES
        assert "tl.dot" not in finding_text(f)


@pytest.mark.parametrize("run_id", RUNS)
def test_no_step_restates_slower(run_id: str) -> None:
    for f in findings(run_id):
        for step in f.next:
            text = advice_text(step)
            assert "slower" not in text and "fewer loads in flight" not in text


def test_library_baselines_get_library_advice() -> None:
    for f in findings(NEWEST):
        if f.kind == FindingKind.CASE and f.variant in ("eager", "native"):
            code_steps = {Action.RAISE_OCCUPANCY, Action.BYTES_IN_FLIGHT, Action.WIDER_LOADS,
                          Action.MORE_PROGRAMS, Action.WHOLE_WAVES}  # fmt: skip
            assert not code_steps & {s.action for s in f.next}, f.subject


# --- history: v1 -> v2 -----------------------------------------------------------------------


def test_history_finds_the_occupancy_change_that_did_not_move_time() -> None:
    (h,) = [f for f in findings(NEWEST) if f.kind == FindingKind.HISTORY]
    assert h.evidence["previous_run"] == OLDER
    where = h.evidence["tried_where"]
    dtype, shape = where.split()
    before, after = row(OLDER, LAB, dtype, shape), row(NEWEST, LAB, dtype, shape)
    assert h.evidence["occupancy_before_pct"] == before.achieved_occupancy_pct
    assert h.evidence["occupancy_after_pct"] == after.achieved_occupancy_pct
    assert after.achieved_occupancy_pct - before.achieved_occupancy_pct >= th.OCCUPANCY_GAP_PCT
    cmp = stats.compare_cases(after, before)
    assert cmp.outcome == "noise" or abs(cmp.delta_pct) < th.NO_EFFECT_TIME_PCT
    # the issue's example
    assert (where, round(before.achieved_occupancy_pct, 1), round(after.achieved_occupancy_pct, 1)
            ) == ("float32 16384x8192", 45.6, 89.7)  # fmt: skip
    # and the step is never advised again for the lab kernel
    for f in findings(NEWEST):
        if f.variant == LAB and f.kind in (FindingKind.CASE, FindingKind.VERDICT):
            assert Action.RAISE_OCCUPANCY not in {s.action for s in f.next}, f.subject


def test_the_oldest_run_has_no_history() -> None:
    assert not [f for f in findings(OLDER) if f.kind == FindingKind.HISTORY]


def test_the_notebooks_ruled_out_steps_are_read() -> None:
    ruled = notebook_ruled_out("rmsnorm", lab_dir())
    assert Action.WIDER_LOADS in ruled["triton"]
    assert "128" in ruled["triton"][Action.WIDER_LOADS]


# --- NVIDIA's rules, judged on the real results ---------------------------------------------------


def test_tail_messages_are_checked_against_the_actual_waves() -> None:
    judged = [r for f in findings(NEWEST) for r in f.nvidia_rules if r.title == "Tail Effect"]
    assert judged
    k = kernels(NEWEST).set_index("launch")
    for r in judged:
        waves = k.loc[r.launch, "waves_per_sm"]
        slots = math.ceil(round(waves, 6))
        idle = (slots - waves) / slots
        if idle < th.TAIL_IDLE_SHARE:
            assert r.suppressed in ("tail_small", "dram_saturated", "tensor_saturated"), waves
        else:
            assert r.suppressed != "tail_small", waves
    assert sum(r.suppressed == "tail_small" for r in judged) > len(judged) / 2


# --- the verdict, on device-time statistics -----------------------------------------------------


@pytest.mark.parametrize("run_id", RUNS)
def test_verdict_tally_follows_the_statistics(run_id: str) -> None:
    df = cases(run_id)
    expected: dict[str, dict[str, int]] = {}
    places: dict[str, list[str]] = {}
    for lab in df[df.variant == LAB].itertuples():
        same = df[df.baseline & (df["dtype"] == lab.dtype) & (df["shape"] == lab.shape)]
        for base in same.itertuples():
            outcome = stats.compare_cases(lab._asdict(), base._asdict()).outcome
            expected.setdefault(base.variant, dict.fromkeys(stats.OUTCOMES, 0))[outcome] += 1
            places.setdefault(f"{lab.dtype} {lab.shape}", []).append(outcome)
    v = verdict(run_id)
    assert v.tally == expected
    if all(o == "faster" for os in places.values() for o in os):
        assert v.verdict == Verdict.WIN
    elif all("slower" in os for os in places.values()):
        assert v.verdict == Verdict.NOT_A_WIN
    else:
        assert v.verdict == Verdict.ACTIVE_TRACK
    assert len(v.comparisons) == sum(sum(t.values()) for t in expected.values())
    assert {c.method for c in v.comparisons} == {"normal approximation"}  # schema 1: no samples


# --- the default view: a screenful that fits 80 columns -------------------------------------------


def test_default_view_is_a_screenful_in_80_columns() -> None:
    buf = io.StringIO()
    render_terminal(report(NEWEST), Console(file=buf, width=80, color_system=None))
    lines = buf.getvalue().splitlines()
    assert max(len(line) for line in lines) <= 80
    assert len(lines) <= 60
    text = buf.getvalue()
    assert "rmsnorm triton  ACTIVE TRACK" in text and "history: " in text
    assert "withheld: raise occupancy" in text


# --- compare ------------------------------------------------------------------------------------


@cache
def compared() -> pd.DataFrame:
    return compare.compare_runs(store.load(run_path(OLDER)), store.load(run_path(NEWEST)))


def test_compare_matches_the_same_96_cases() -> None:
    df = compared()
    assert len(df) == 96
    keys = ["variant", "dtype", "shape"]
    for run_id in RUNS:
        assert sorted(map(tuple, cases(run_id)[keys].values)) == sorted(map(tuple, df[keys].values))


def expected_flag(a: pd.Series, b: pd.Series) -> str:
    """B against A from the stored p50, IQR and repetitions alone (schema-1 runs keep no samples),
    computed here independently of profkit.stats: each median's standard error is
    sqrt(pi/2) * IQR / 1.349 / sqrt(n), combined on the log scale, 95% two-sided."""
    ratio = b.device_p50_ms / a.device_p50_ms
    var = sum(
        (math.sqrt(math.pi / 2) * r.device_iqr_ms / 1.349 / math.sqrt(r.device_reps)
         / r.device_p50_ms) ** 2
        for r in (a, b)
    )  # fmt: skip
    low, high = (
        ratio * math.exp(-1.959964 * math.sqrt(var)),
        ratio * math.exp(1.959964 * math.sqrt(var)),
    )
    if high / low - 1 > stats.UNSTABLE_WIDTH:
        return "unstable"
    gap_us = abs(b.device_p50_ms - a.device_p50_ms) * 1e3
    if low <= 1 <= high or abs(ratio - 1) < 0.02 or gap_us < stats.PRACTICAL_FLOOR_US:
        return "noise"
    return "slower" if ratio > 1 else "faster"


def test_compare_flags_follow_the_interval_of_the_ratio() -> None:
    a, b = cases(OLDER).set_index(["variant", "dtype", "shape"]), cases(NEWEST)
    b = b.set_index(["variant", "dtype", "shape"])
    for r in compared().itertuples():
        key = (r.variant, r.dtype, r.shape)
        assert r.flag == expected_flag(a.loc[key], b.loc[key]), key
        assert r.delta_ms == pytest.approx(
            b.loc[key, "device_p50_ms"] - a.loc[key, "device_p50_ms"]
        )
        assert r.method == "normal approximation"


@pytest.mark.parametrize(
    ("variant", "dtype", "shape"),
    [("triton", "bfloat16", "32x16384"), ("triton", "float16", LARGEST),
     ("eager", "float16", "1x4096"), ("native", "float16", "1x4096")],
)  # fmt: skip
def test_compare_rows_against_the_csvs(variant: str, dtype: str, shape: str) -> None:
    df = compared()
    (index,) = df.index[(df.variant == variant) & (df["dtype"] == dtype) & (df["shape"] == shape)]
    r = df.loc[index]
    a, b = row(OLDER, variant, dtype, shape), row(NEWEST, variant, dtype, shape)
    assert (r.device_p50_ms_a, r.device_p50_ms_b) == (a.device_p50_ms, b.device_p50_ms)
    assert r.ratio == pytest.approx(b.device_p50_ms / a.device_p50_ms)
    assert r.ci_low < r.ratio < r.ci_high
    assert r.dram_throughput_pct_delta == pytest.approx(
        b.dram_throughput_pct - a.dram_throughput_pct
    )
    assert r.flag == expected_flag(a, b)


def test_compare_summary_on_the_real_runs() -> None:
    lab, base = compare.summary(compared())
    flags = compared()[compared().variant == LAB].flag.value_counts()
    assert lab.startswith(
        f"triton: {flags.get('faster', 0)} faster, {flags.get('slower', 0)} slower, "
        f"{flags.get('noise', 0)} noise, {flags.get('unstable', 0)} unstable of 24"
    )
    # the baselines did not change between the runs, yet some moved beyond their spread
    assert base.startswith("baselines: ") and "run-to-run drift" in base


def test_compare_terminal_has_one_line_per_case_in_160_columns() -> None:
    console = Console(file=io.StringIO(), width=160, record=True)
    compare.render_terminal(compared(), console)
    lines = console.export_text().splitlines()
    rows = [
        line for line in lines if re.match(r"\s*(triton|eager|native|compile) \w+ \d+x\d+", line)
    ]
    assert len(rows) == 96


# --- reports from elsewhere: a cuBLAS GEMM, and the RMSNorm fixture --------------------------


def test_cublas_gemm_is_bound_on_the_tensor_pipe_and_gets_library_advice() -> None:
    tables = read_report(ROOT / "tests" / "fixtures" / "fx_matmul.ncu-rep.xz")
    (f,) = explain_launches(tables.kernels, tables.rules)
    tensor = tables.kernels.tensor_any_pct.iloc[0]
    assert tensor == pytest.approx(95.0, abs=1.0)
    assert f.subject.startswith("nvjet") and f.evidence["family"] == "cublas"
    assert f.bottleneck == Bottleneck.COMPUTE and f.unit == Unit.TENSOR
    assert [s.action for s in f.next] == [Action.LIBRARY_SHAPES]
    assert "tl.dot" not in first_advice_text(f)
    # NVIDIA's occupancy estimate (81%) and "two blocks per SM" are kept, but set aside
    by_rule = {r.rule: r for r in f.nvidia_rules}
    occupancy = by_rule["TheoreticalOccupancy"]
    assert occupancy.speedup_pct == pytest.approx(81.25)
    assert occupancy.suppressed == "tensor_saturated"
    assert by_rule["LaunchConfiguration"].suppressed == "tensor_saturated"


def test_the_fixture_reports_new_counters_reach_the_findings() -> None:
    tables = read_report(ROOT / "tests" / "fixtures" / "fx_rmsnorm.ncu-rep.xz")
    found = list(explain_launches(tables.kernels, tables.rules))
    triton = found[0]
    k = tables.kernels.iloc[0]
    assert triton.evidence["l2_hit_pct"] == k.l2_hit_pct
    assert triton.evidence["l1_throughput_pct"] == k.l1_throughput_pct
    assert k.ncu_sm_clock_mhz == pytest.approx(
        1967.6, abs=0.1
    )  # gpc__cycles_elapsed.avg.per_second
    assert {f.evidence["family"] for f in found[1:]} <= {"aten_elementwise", "aten_reduce"}


# --- today's H200 runs (schema 2): siblings, small-grid matmuls, Tensor-busy, throttling ---------

RMSNORM_H200 = "rmsnorm-20261130-162158-vm-f1ea"
MATMUL_H200 = "matmul-20261130-162825-vm-cac0"
VECTOR_ADD_H200 = "vector_add-20261130-162740-vm-98c9"


def found(run_id: str, variant: str, dtype: str, shape: str) -> Finding:
    (f,) = [f for f in findings(run_id) if f.kind == FindingKind.CASE and f.variant == variant
            and f.dtype == dtype and f.shape == shape]  # fmt: skip
    return f


def test_rmsnorm_fp32_4096_is_not_at_the_roof_while_compile_moves_the_same_bytes_faster() -> None:
    f = found(RMSNORM_H200, "triton", "float32", "4096x4096")
    mine, sib = (row(RMSNORM_H200, v, "float32", "4096x4096") for v in ("triton", "compile"))
    assert mine.pct_copy_same_size >= th.NEAR_SAME_SIZE_COPY_PCT  # the roof line alone says "at"
    run = store.load(run_path(RMSNORM_H200))
    assert stats.compare_cases(mine, sib, run.samples).outcome == "slower"
    assert Cause.AT_ROOF not in [r.cause for r in f.reasons]
    assert Cause.SIBLING_FASTER in [r.cause for r in f.reasons]
    assert Action.FEWER_BYTES not in [s.action for s in f.next]
    assert f.next[0].action == Action.MATCH_SIBLING and f.next[0].detail["sibling"] == "compile"
    assert f.evidence["sibling_time_share_pct"] == pytest.approx(
        sib.device_p50_ms / mine.device_p50_ms * 100, rel=0.01
    )
    assert "only moving fewer bytes helps" not in finding_text(f)
    assert "compile moves the same bytes in 93.2% of its time" in finding_text(f)


def test_no_case_at_the_roof_has_a_sibling_moving_as_much_measurably_faster() -> None:
    run = store.load(run_path(RMSNORM_H200))
    df = cases(RMSNORM_H200)
    at_roof = [
        f
        for f in findings(RMSNORM_H200)
        if f.kind == FindingKind.CASE and Cause.AT_ROOF in [r.cause for r in f.reasons]
    ]
    assert at_roof
    for f in at_roof:
        mine = row(RMSNORM_H200, f.variant, f.dtype, f.shape)
        same = df[(df["dtype"] == f.dtype) & (df["shape"] == f.shape) & (df.variant != f.variant)]
        for sib in same.itertuples():
            c = stats.compare_cases(mine, same.loc[sib.Index], run.samples)
            assert c.outcome != "slower" or sib.bytes != mine.bytes, (f.subject, sib.variant)


def test_decode_matmuls_short_of_tiles_get_no_tile_advice_when_cublas_runs_as_few() -> None:
    """At M = 128 the lab kernels run 128 programs on 132 SMs, but cuBLAS runs a grid no larger
    and is measurably faster: "launch more programs" is refuted (an expert's objection to the
    previous reading), and larger tiles are never the advice."""
    df = cases(MATMUL_H200)
    few = df[(df.baseline != True) & (df.waves_per_sm < 1) & (df.grid_size < SM_COUNT)]  # noqa: E712
    assert len(few) >= 8  # 16x and 128x8192x8192, both dtypes, both lab variants
    checked = 0
    for r in few.itertuples():
        f = found(MATMUL_H200, r.variant, r.dtype, r.shape)
        assert Action.FEED_TENSOR not in [s.action for s in f.next], f.subject
        if r.flops / r.bytes < th.MATMUL_INTENSITY_FLOP_PER_BYTE:
            continue  # M=16 is a matrix-vector product by its model, not judged as a matmul
        cublas = row(MATMUL_H200, "cublas", r.dtype, r.shape)
        assert cublas["grid_size"] <= r.grid_size
        (grid,) = [x for x in f.reasons if x.cause == Cause.SMALL_GRID]
        assert grid.detail.get("refuted") and f.evidence["sibling_variant"] == "cublas"
        assert Action.MORE_PROGRAMS not in [s.action for s in f.next]
        assert "the grid is not what limits it" in finding_text(f)
        checked += 1
    assert checked == 4  # M=128: both dtypes, both lab variants


def test_a_busy_tensor_pipe_is_compute_bound_on_the_tensor_cores_in_the_matmul_run() -> None:
    df = cases(MATMUL_H200)
    busy = df[df.tensor_pipe_pct >= th.TENSOR_BUSY_PCT]
    assert len(busy) >= 20
    for r in busy.itertuples():
        f = found(MATMUL_H200, r.variant, r.dtype, r.shape)
        assert f.bottleneck == Bottleneck.COMPUTE and f.unit == Unit.TENSOR, f.subject
        assert f.reasons[0].cause == Cause.TENSOR_BUSY
    f = found(MATMUL_H200, "cublas", "float16", "16384x4096x14336")
    assert f.evidence["sol_bottleneck"] == "memory"  # ncu's SOL alone said memory (L1/shared)
    assert "memory-bound" not in finding_text(f)


def test_no_lab_matmul_is_told_less_math_while_a_sibling_is_as_fast() -> None:
    run = store.load(run_path(MATMUL_H200))
    df = cases(MATMUL_H200)
    pointed = 0
    for f in findings(MATMUL_H200):
        if f.kind != FindingKind.CASE or Action.LESS_MATH not in [s.action for s in f.next]:
            continue
        mine = row(MATMUL_H200, f.variant, f.dtype, f.shape)
        same = df[(df["dtype"] == f.dtype) & (df["shape"] == f.shape) & (df.variant != f.variant)]
        for i in same.index:
            c = stats.compare_cases(mine, same.loc[i], run.samples)
            assert c.outcome not in ("slower", "noise"), (f.subject, same.loc[i, "variant"])
    for f in findings(MATMUL_H200):
        pointed += f.kind == FindingKind.CASE and Action.MATCH_SIBLING in [s.action for s in f.next]
    assert pointed >= 4
    f = found(MATMUL_H200, "triton", "bfloat16", "16384x4096x14336")
    assert f.next[0].action == Action.MATCH_SIBLING and f.next[0].detail["sibling"] == "cublas"
    assert "do less math" not in advice_text(f.next[0])


def test_throttled_matmul_cases_are_said_in_verdicts_and_cases() -> None:
    df = cases(MATMUL_H200)
    noted = df.clock_note.fillna("").astype(str).str.len() > 0
    large = ~df["shape"].str.match(r"^(16|128)x")
    assert (noted & large).sum() == 27 and large.sum() == 30  # the capture's power cap
    for r in df[noted].itertuples():
        f = found(MATMUL_H200, r.variant, r.dtype, r.shape)
        assert Cause.THROTTLED in [x.cause for x in f.reasons] and f.evidence["clock_note"]
        assert "It ran throttled" in finding_text(f)
    for r in df[~noted].itertuples():
        f = found(MATMUL_H200, r.variant, r.dtype, r.shape)
        assert Cause.THROTTLED not in [x.cause for x in f.reasons]
    v = next(
        f for f in findings(MATMUL_H200) if f.kind == FindingKind.VERDICT and f.variant == "triton"
    )
    (why,) = [x for x in v.reasons if x.cause == Cause.THROTTLED]
    assert v.evidence["throttled_comparisons"] == sum(c.throttled for c in v.comparisons) == 14
    assert v.evidence["throttle_reasons"] == "sw_power_cap"
    assert "those gaps may be the clock, not the code" in finding_text(v)
    assert v.evidence["worst_loss_throttled"] == ["cublas"]
    assert "at bfloat16 128x8192x8192 (cublas ran throttled)." in finding_text(v)  # the worst loss


@pytest.mark.parametrize("run_id", [*RUNS, RMSNORM_H200])
def test_runs_at_full_clocks_or_without_clock_notes_say_nothing_of_throttling(run_id: str) -> None:
    for f in findings(run_id):
        assert Cause.THROTTLED not in [
            x.cause for x in f.reasons
        ] and "throttled" not in finding_text(f)


def test_ties_with_intervals_clear_of_one_are_counted_apart() -> None:
    """vector_add ties torch.add at 15 of 15 by the floor, but from 2^26 up every interval
    excludes 1 on the slow side (0.4-1.2%): the verdict says so rather than hide it."""
    run = store.load(run_path(VECTOR_ADD_H200))
    v = next(f for f in findings(VECTOR_ADD_H200) if f.kind == FindingKind.VERDICT)
    slower = [c for c in v.comparisons if c.outcome == "noise" and c.ci_low > 1]
    assert v.tally["torch"]["noise"] == 15 and len(slower) >= 6
    assert v.evidence["ties_slower_cases"] == len(slower)
    big = [c for c in slower if int(c.shape) >= 1 << 26]
    assert len(big) == 6  # fp32, fp16 and bf16 at 2^26 and 2^28
    assert f"Of the ties, {len(slower)} slower" in finding_text(
        v
    ) and "real but negligible" in finding_text(v)
    assert "measurably slower" not in finding_text(
        v
    )  # read as a contradiction beside "under the floor"
    assert run.samples is not None


def test_a_matmul_stalled_on_its_pipeline_is_told_to_deepen_it() -> None:
    """Session 3's split-K matmul at M = 128 stalls on barriers (45% of active cycles): in a
    tl.dot loop those are the waits for the next stage's tiles, so the step is more stages, never
    'reduce within warps' (a reduction's remedy)."""
    f = found("matmul-20261130-185405-vm-57a102", "triton", "bfloat16", "128x8192x8192")
    stall = next(r for r in f.reasons if r.cause == Cause.STALL)
    assert stall.detail["stall"] == "barrier"
    assert f.next[0].action == Action.DEEPER_PIPELINE
    assert "reduce within warps" not in finding_text(f) + " ".join(advice_text(s) for s in f.next)


# --- a short stream as fast as a copy of its bytes (vector_add run 9f781f) -----------------------


VADD = "vector_add-20261130-194931-vm-9f781f"
STREAM_STEPS = {Action.HIDE_LATENCY, Action.BYTES_IN_FLIGHT, Action.MORE_PROGRAMS}


def test_a_latency_bound_stream_at_the_same_size_copy_gets_no_latency_advice() -> None:
    # the stored run's small cases are latency-bound in ncu's terms (long scoreboard stalls, a
    # grid under a wave) yet as fast as a device copy of the same bytes: hiding latency or a
    # bigger grid would not beat the copy, which has the same limits at that size
    run = store.load(run_path(VADD))
    df = run.cases
    pct = 100 * df.gbps / df.copy_gbps_same_size
    by_case = {f.case: f for f in explain_run(run) if f.kind == FindingKind.CASE and f.reasons}
    checked = 0
    for r, share in zip(df.itertuples(), pct, strict=True):
        f = by_case.get(r.case)
        if f is None or f.bottleneck not in (Bottleneck.LATENCY, Bottleneck.BALANCED):
            continue
        at_size_roof = Cause.AT_SIZE_ROOF in [x.cause for x in f.reasons]
        if round(share, 6) >= th.NEAR_SAME_SIZE_COPY_PCT and at_size_roof:
            assert not STREAM_STEPS & {s.action for s in f.next}, f.case
            # under SHORT_KERNEL_MS the copy is a launch too: the launch is the cost
            short = r.ncu_duration_ms < th.SHORT_KERNEL_MS
            assert f.next[0].action == (Action.CUDA_GRAPH if short else Action.FEWER_BYTES)
            checked += 1
        elif round(share, 6) < th.NEAR_SAME_SIZE_COPY_PCT:
            assert not at_size_roof, f.case
    assert checked >= 4  # the run's 65536 and 1048576 cases, triton and torch


def test_a_library_gemm_is_near_its_roof_only_where_its_tensor_cores_are_busy() -> None:
    """cuBLAS at M=64 keeps its Tensor Cores 30% busy: its step says what a library kernel's
    gains come from, not that it is near its roof; at 8192^3 (busy) it says both."""
    by = {f.subject: f for f in findings("matmul-20261201-033940-vm-f75dcf")}
    skinny, big = (by[f"matmul cublas bfloat16 {s}x8192x8192"] for s in (64, 8192))
    assert skinny.evidence["tensor_any_pct"] < th.TENSOR_BUSY_PCT <= big.evidence["tensor_any_pct"]
    assert skinny.next[0].action == big.next[0].action == Action.LIBRARY_SHAPES
    assert advice_text(skinny.next[0]).startswith("it is library code, its tiles not yours")
    assert advice_text(big.next[0]).startswith("it is library code near its roof")
