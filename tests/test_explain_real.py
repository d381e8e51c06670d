"""profkit explain and compare on the committed H200 RMSNorm runs and a committed cuBLAS report.

What the findings say must follow from the stored tables: the expected verdicts, losses and flags
are computed here from cases.csv (each case's device_p50_ms and device_iqr_ms), not by profkit's own code.
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

from profkit import compare, store
from profkit import stats as th_stats
from profkit import thresholds as th
from profkit.explain import Finding, explain_launches, explain_run, format_value
from profkit.report import read_report

ROOT = Path(__file__).parents[1]
OLDER, NEWEST = "rmsnorm-20261130-014110-vm-83a4", "rmsnorm-20261130-014917-vm-4bc5"
RUNS = (OLDER, NEWEST)
LAB = "triton"  # the lab's fused kernel; eager, native and compile are the baselines
LARGEST = "16384x8192"
SM_COUNT = 132  # the H200's, as both manifests record


def run_path(run_id: str) -> Path:
    return ROOT / "profiles" / run_id


@cache
def findings(run_id: str) -> tuple[Finding, ...]:
    return tuple(explain_run(store.load(run_path(run_id))))


@cache
def cases(run_id: str) -> pd.DataFrame:
    return store.load(run_path(run_id)).cases


def row(run_id: str, variant: str, dtype: str, shape: str) -> pd.Series:
    df = cases(run_id)
    (index,) = df.index[(df.variant == variant) & (df["dtype"] == dtype) & (df["shape"] == shape)]
    return df.loc[index]


def case_finding(run_id: str, variant: str, dtype: str, shape: str) -> Finding:
    subject = f"rmsnorm {variant} {dtype} {shape}"
    (f,) = [f for f in findings(run_id) if f.kind == "case" and f.subject == subject]
    return f


def verdict(run_id: str) -> Finding:
    (v,) = [f for f in findings(run_id) if f.kind == "verdict"]
    return v


def fmt(key: str, value: float) -> str:
    return format_value(key, float(value))


# --- what cases.csv says, computed here ----------------------------------------------------------


def outcomes(run_id: str) -> dict[tuple[str, str, str], str]:
    """(dtype, shape, baseline) -> faster | slower | noise for the lab kernel: a difference of
    p50s no larger than the larger of the two spreads is noise."""
    df = cases(run_id)
    out = {}
    for lab in df[df.variant == LAB].itertuples():
        same = df[df.baseline & (df["dtype"] == lab.dtype) & (df["shape"] == lab.shape)]
        for base in same.itertuples():
            delta, spread = (
                lab.device_p50_ms - base.device_p50_ms,
                max(lab.device_iqr_ms, base.device_iqr_ms),
            )
            outcome = "slower" if delta > spread else "faster" if -delta > spread else "noise"
            out[(lab.dtype, lab.shape, base.variant)] = outcome
    return out


def expected_verdict(run_id: str) -> str:
    df, found = cases(run_id), outcomes(run_id)
    if not df[df.variant == LAB].correct.all():
        return "not a win"
    if all(o == "faster" for o in found.values()):
        return "win"
    places = {(dtype, shape) for dtype, shape, _ in found}
    beaten = all(
        any(o == "slower" for (d, s, _), o in found.items() if (d, s) == place) for place in places
    )
    return "not a win" if beaten else "active track"


def loss_pct(run_id: str, dtype: str, shape: str, baseline: str) -> float:
    lab, base = row(run_id, LAB, dtype, shape), row(run_id, baseline, dtype, shape)
    return (lab.device_p50_ms - base.device_p50_ms) / base.device_p50_ms * 100


def losses_named(text: str) -> dict[tuple[str, str, str], str]:
    """The verdict's "Losses to <baseline>: <dtype> <shape> by <x>%, <shape> by <y>%; ..." lists
    as (dtype, shape, baseline) -> the quoted percentage."""
    named = {}
    for baseline, listed in re.findall(r"Losses to (\w+): (.*?%)\.(?: |$)", text):
        for group in listed.split("; "):
            dtype, rest = group.split(" ", 1)
            for item in rest.split(", "):
                shape, pct = item.split(" by ")
                named[(dtype, shape, baseline)] = pct
    return named


# --- per case ----------------------------------------------------------------------------------


@pytest.mark.parametrize("run_id", RUNS)
def test_fused_kernel_is_memory_bound_at_the_largest_shape_and_quotes_its_dram_level(
    run_id: str,
) -> None:
    r = row(run_id, LAB, "float16", LARGEST)
    f = case_finding(run_id, LAB, "float16", LARGEST)
    assert f.bottleneck == "memory"
    assert f.text.index("Memory-bound") < f.text.index("DRAM")
    assert f"runs at {fmt('dram_throughput_pct', r.dram_throughput_pct)} of peak" in f.text
    assert f.evidence["dram_throughput_pct"] == pytest.approx(r.dram_throughput_pct)
    # and where it stands against the measured copy, the practical roof
    assert f"{fmt('pct_peak_bw', r.pct_peak_bw)} of the measured copy bandwidth" in f.text


@pytest.mark.parametrize("run_id", RUNS)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_unfused_eager_states_its_kernel_count_and_extra_traffic(run_id: str, dtype: str) -> None:
    r = row(run_id, "eager", dtype, LARGEST)
    f = case_finding(run_id, "eager", dtype, LARGEST)
    kernels = int(r.kernel_count)
    assert kernels > 1
    assert f.evidence["kernel_count"] == kernels
    assert f"Its {kernels} kernels move {fmt('dram_bytes', r.dram_bytes)} through DRAM" in f.text
    assert f.next_step.startswith("fuse the kernels")


@pytest.mark.parametrize("run_id", RUNS)
def test_decode_launches_lead_with_the_grid_and_claim_no_occupancy_problem(run_id: str) -> None:
    df = cases(run_id)
    tiny = df[(df.grid_size < SM_COUNT) & (df.waves_per_sm < 1) & (df.kernel_count == 1)]
    assert len(tiny) >= 12  # every variant at 1x4096 and 16x8192, at least
    for r in tiny.itertuples():
        f = case_finding(run_id, r.variant, r.dtype, r.shape)
        blocks = f"{int(r.grid_size)} block{'s' if r.grid_size > 1 else ''} for {SM_COUNT} SMs"
        assert f"Small grid: it launches {blocks}" in f.text, f.subject
        assert "Low occupancy" not in f.text, f.subject
        assert f"{r.waves_per_sm:.3g}" not in f.text  # no "0.000947 of one wave"


@pytest.mark.parametrize("run_id", RUNS)
def test_no_case_is_told_to_add_warps_at_full_theoretical_occupancy(run_id: str) -> None:
    for r in cases(run_id).itertuples():
        if round(r.theoretical_occupancy_pct, 1) < th.FULL_OCCUPANCY_PCT:
            continue
        step = case_finding(run_id, r.variant, r.dtype, r.shape).next_step or ""
        assert "more warps per SM" not in step and "num_warps" not in step, (r.variant, r.shape)


@pytest.mark.parametrize("run_id", RUNS)
def test_a_stream_at_the_copy_roof_is_told_only_fewer_bytes_help(run_id: str) -> None:
    for r in cases(run_id).itertuples():
        f = case_finding(run_id, r.variant, r.dtype, r.shape)
        at_roof = r.pct_peak_bw >= th.NEAR_COPY_CEILING_PCT
        assert ("about as fast as a device copy" in f.text) is at_roof, f.subject


# --- the verdict ------------------------------------------------------------------------------


@pytest.mark.parametrize("run_id", RUNS)
def test_verdict_follows_the_timing(run_id: str) -> None:
    v, found = verdict(run_id), outcomes(run_id)
    assert v.verdict == expected_verdict(run_id) == "active track"
    lab = cases(run_id)[cases(run_id).variant == LAB]
    assert f"correct at all {len(lab)} dtype/shapes" in v.text
    for baseline in ("eager", "native", "compile"):
        mine = [o for (_, _, b), o in found.items() if b == baseline]
        for outcome in ("faster", "slower", "noise"):
            assert v.evidence[f"vs {baseline}: {outcome}"] == mine.count(outcome)
    ties = list(found.values()).count("noise")
    assert v.evidence["ties"] == ties
    assert f"{ties} comparisons tie within the timing spread" in v.text


@pytest.mark.parametrize("run_id", RUNS)
def test_losses_named_are_exactly_those_beyond_the_larger_spread(run_id: str) -> None:
    v = verdict(run_id)
    expected = {key for key, outcome in outcomes(run_id).items() if outcome == "slower"}
    named = losses_named(v.text)
    assert set(named) == expected
    for dtype, shape, baseline in expected:
        pct = loss_pct(run_id, dtype, shape, baseline)
        assert named[(dtype, shape, baseline)] == fmt("delta_pct", pct)
        assert v.evidence[f"{dtype} {shape} vs {baseline}: outcome"] == "slower"
    worst = max(expected, key=lambda k: loss_pct(run_id, *k))
    assert f"by up to {fmt('delta_pct', loss_pct(run_id, *worst))} (worst: {worst[0]} " in v.text


def test_newest_run_verdict_leads_with_the_headline() -> None:
    text = verdict(NEWEST).text
    assert text.startswith(
        "triton is an active track: correct at all 24 dtype/shapes; beats eager at 23 of 24 and "
        "ties at 1; beats native at 19 of 24 and ties at 5; loses to compile at 9 of 24, by up "
        "to 10.5% (worst: float32 2048x16384), beats it at 9 and ties at 6. Losses to compile: "
    )
    assert text.count("within the") == 1  # ties summarised, not listed one by one


@pytest.mark.parametrize("run_id", RUNS)
def test_fusion_evidence_at_the_largest_case(run_id: str) -> None:
    df = cases(run_id)
    lab_rows = df[df.variant == LAB]
    fused = lab_rows.loc[lab_rows.bytes.idxmax()]
    eager = row(run_id, "eager", fused["dtype"], fused["shape"])
    where = f"{fused['dtype']} {fused['shape']}"
    v = verdict(run_id)
    assert (
        f"Fusion at {where}, the largest case: triton's 1 kernel runs at "
        f"{fmt('dram_throughput_pct', fused.dram_throughput_pct)} of DRAM peak "
        f"({fmt('pct_peak_bw', fused.pct_peak_bw)} of the measured copy bandwidth)" in v.text
    )
    ratio = fmt("_x", eager.dram_bytes / fused.dram_bytes)
    assert (
        f"unfused eager launches {int(eager.kernel_count)} kernels and moves {ratio} those bytes "
        f"({fmt('dram_bytes', eager.dram_bytes)})" in v.text
    )
    assert v.evidence[f"{where} eager: kernel_count"] == int(eager.kernel_count)


_CAUSE_SENTENCE = re.compile(r"At (\S+ \S+) against (\w+)(?: \(also ([^)]*)\))?: (.*)")


def loss_sentences(step: str) -> list[tuple[list[tuple[str, ...]], str, str]]:
    """The verdict's next step, one sentence per cause: ([(dtype, shape), ...], baseline, body)."""
    out = []
    for sentence in re.split(r"(?<=\.) (?=At )", step):
        where, baseline, also, body = _CAUSE_SENTENCE.match(sentence).groups()
        places = [where, *(also.split(", ") if also else [])]
        out.append(([tuple(p.split()) for p in places], baseline, body))
    return out


@pytest.mark.parametrize("run_id", RUNS)
def test_next_step_covers_every_loss_and_agrees_with_the_counters_it_cites(run_id: str) -> None:
    v = verdict(run_id)
    sentences = loss_sentences(v.next_step)
    covered = [(d, s, b) for places, b, _ in sentences for d, s in places]
    expected = {key for key, outcome in outcomes(run_id).items() if outcome == "slower"}
    assert sorted(covered) == sorted(expected)
    for places, baseline, body in sentences:
        for dtype, shape in places:
            lab, base = row(run_id, LAB, dtype, shape), row(run_id, baseline, dtype, shape)
            if body.startswith("occupancy is not the limiter"):
                gap = th.OCCUPANCY_GAP_PCT
                assert lab.achieved_occupancy_pct >= base.achieved_occupancy_pct - gap
                assert lab.dram_throughput_pct < base.dram_throughput_pct
                assert body.endswith("more warps will not help.")
            else:
                assert "cut registers per thread" in body
                assert lab.theoretical_occupancy_pct < base.theoretical_occupancy_pct
                assert lab.registers_per_thread > base.registers_per_thread


def test_newest_run_next_step_sets_the_counters_side_by_side() -> None:
    """Same launch and both at full theoretical occupancy, yet lower DRAM: not occupancy."""
    lab = row(NEWEST, LAB, "bfloat16", LARGEST)
    base = row(NEWEST, "compile", "bfloat16", LARGEST)
    assert (lab.grid_size, lab.block_size) == (base.grid_size, base.block_size)
    assert lab.theoretical_occupancy_pct == base.theoretical_occupancy_pct == 100.0
    step = verdict(NEWEST).next_step
    assert (
        f"At bfloat16 {LARGEST} against compile (also float32 {LARGEST}, float32 4096x8192, "
        "float32 4096x1024): occupancy is not the limiter: with the same launch as compile "
        f"({int(lab.grid_size)} blocks of {int(lab.block_size)} threads), triton holds "
        f"{fmt('_pct', lab.achieved_occupancy_pct)} achieved occupancy (100.0% theoretical at "
        f"{int(lab.registers_per_thread)} registers per thread) against compile's "
        f"{fmt('_pct', base.achieved_occupancy_pct)} (100.0% at {int(base.registers_per_thread)}), "
        "yet its DRAM "
        f"runs at {fmt('_pct', lab.dram_throughput_pct)} of peak against "
        f"{fmt('_pct', base.dram_throughput_pct)}; inspect the SASS for load width" in step
    )


_NUMBER = re.compile(r"(?<![\w.])\d+(?:,\d{3})*(?:\.\d+)?")
# fixed vocabulary, not measured figures: "128-bit loads", "LDG.E.128"
CONSTANTS = {"128"}


@pytest.mark.parametrize("run_id", RUNS)
def test_every_number_the_real_findings_quote_is_in_their_evidence(run_id: str) -> None:
    for f in findings(run_id):
        allowed = set(_NUMBER.findall(f.subject)) | CONSTANTS
        for key, value in f.evidence.items():
            allowed |= set(_NUMBER.findall(key))
            if value is not None:
                allowed |= set(_NUMBER.findall(format_value(key, value)))
        for said in (f.text, f.next_step or ""):
            assert set(_NUMBER.findall(said)) <= allowed, (f.subject, said)


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
    if high / low - 1 > th_stats.UNSTABLE_WIDTH:
        return "unstable"
    gap_us = abs(b.device_p50_ms - a.device_p50_ms) * 1e3
    if low <= 1 <= high or abs(ratio - 1) < 0.02 or gap_us < th_stats.PRACTICAL_FLOOR_US:
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


# --- a report from elsewhere: one cuBLAS GEMM -----------------------------------------------------


def test_cublas_gemm_is_compute_bound_on_the_tensor_cores() -> None:
    report = read_report(ROOT / "tests" / "fixtures" / "fx_matmul.ncu-rep.xz")
    (f,) = explain_launches(report.kernels, report.rules)
    tensor = report.kernels.tensor_pipe_pct.iloc[0]
    assert tensor == pytest.approx(95.0, abs=1.0)
    assert f.subject.startswith("nvjet")  # cuBLAS's Hopper GEMM kernels
    assert f.bottleneck == "compute"
    assert f"bound on the Tensor Cores, busy {fmt('tensor_pipe_pct', tensor)}" in f.text
    assert f.evidence["tensor_pipe_pct"] == pytest.approx(tensor)
    assert f.next_step.startswith("do less math")
