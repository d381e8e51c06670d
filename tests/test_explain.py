"""profkit.explain and profkit.explain_render on small constructed tables (CPU only, no files kept).

The tables are built in-test with every column docs/tables.md lists; the committed H200 runs are
checked in test_explain_real.py.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from case_columns import CASE_COLUMNS, NAN
from rich.console import Console

from profkit import store
from profkit.explain import (
    Finding,
    classify,
    explain_launches,
    explain_run,
    format_value,
    timing_outcome,
)
from profkit.explain_render import render_terminal, to_json, to_markdown

CEILINGS = {"copy_gbps": 4000.0, "matmul_tflops": 800.0, "matmul_dtype": "bfloat16"}
SM_COUNT = 132


def case(
    variant: str = "triton",
    *,
    baseline: bool = False,
    shape: str = "4096x8192",
    dtype: str = "float16",
    correct: bool = True,
    device_p50_ms: float | None = None,
    device_iqr_ms: float = 0.001,
    **columns: object,
) -> dict:
    """One cases.csv row: every documented column, counters empty unless given.

    Like a stored run, an incorrect case keeps its timing empty unless a test passes one."""
    row = dict.fromkeys(CASE_COLUMNS, NAN)
    timed = correct or device_p50_ms is not None
    p50 = (0.1 if device_p50_ms is None else device_p50_ms) if timed else NAN
    row.update(
        kernel="rmsnorm", variant=variant, baseline=baseline, dtype=dtype, shape=shape,
        case=f"rmsnorm.{variant}.{dtype}.{shape}", correct=correct,
        rel_err=1e-4 if correct else 0.25, max_abs_err=1e-3, error="" if correct else "mismatch",
        device_reps=100, device_p50_ms=p50, device_p95_ms=p50, device_p5_ms=p50, device_iqr_ms=device_iqr_ms if timed else NAN,
        bytes=134217728.0, flops=100663296.0, pct_peak_bw=50.0,
    )  # fmt: skip
    row.update(columns)
    return row


def run_of(
    rows: list[dict],
    *,
    status: str = "ok",
    reason: str = "",
    fix: str = "",
    rules: pd.DataFrame | None = None,
    ceilings: dict | None = None,
) -> store.Run:
    manifest = {
        "schema": 1, "run_id": "rmsnorm-test", "kernel": "rmsnorm", "complete": True,
        "ceilings": CEILINGS if ceilings is None else ceilings,
        "counters": {"status": status, "reason": reason, "fix": fix},
        "fingerprint": {"gpu": "NVIDIA H200", "sm_count": SM_COUNT},
    }  # fmt: skip
    return store.Run(Path("rmsnorm-test"), manifest, pd.DataFrame(rows), None, rules)


def one_case(**columns: object) -> Finding:
    """The finding for a single lab case (no baseline, so no verdict to compete with)."""
    findings = explain_run(run_of([case(**columns)]))
    return next(f for f in findings if f.kind == "case")


def verdicts(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.kind == "verdict"]


MEMORY_NEAR_PEAK = {"memory_throughput_pct": 92.0, "dram_throughput_pct": 91.2,
                    "sm_throughput_pct": 35.0}  # fmt: skip
# memory-bound on DRAM, short of the copy roof (the fused RMSNorm at 16384x8192 on the H200)
STREAM = {"memory_throughput_pct": 80.8, "dram_throughput_pct": 80.8, "sm_throughput_pct": 41.3}
LATENCY = {"memory_throughput_pct": 25.0, "dram_throughput_pct": 20.0, "sm_throughput_pct": 20.0}


# --- the speed-of-light decision ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("memory", "sm", "expected"),
    [
        (80.0, 10.0, "memory"),  # exactly at the high line is high
        (80.0, 75.0, "memory"),  # high, though only 5 points apart
        (79.9, 75.0, "balanced"),  # just under the line the 5-point gap is balanced
        (75.0, 80.0, "compute"),
        (10.0, 80.0, "compute"),
        (79.99, 75.0, "balanced"),  # both in the band, 4.99 apart
        (85.0, 85.0, "compute"),  # both high and equal: ncu names compute
        (90.0, 85.0, "memory"),
        (60.0, 60.0, "balanced"),  # at the latency line is not under it
        (59.9, 59.9, "latency"),
        (60.0, 10.0, "memory"),  # one side at 60 with a wide gap
        (70.0, 60.0, "memory"),  # a gap of exactly 10 names the higher side
        (65.3, 55.3, "memory"),  # 9.999999... in floats is still a 10-point gap
        (69.9, 60.0, "balanced"),  # 9.9 points
        (60.0, 75.0, "compute"),
    ],
)
def test_classify_follows_ncu_speed_of_light(memory: float, sm: float, expected: str) -> None:
    assert classify(memory, sm) == expected


def test_memory_bound_near_dram_peak_says_only_fewer_bytes_help() -> None:
    f = one_case(**MEMORY_NEAR_PEAK)
    assert f.bottleneck == "memory"
    assert f.evidence["dram_throughput_pct"] == 91.2
    assert (
        "DRAM runs at 91.2% of peak, and at 50.0% of the measured copy bandwidth" not in f.text
    )  # at ncu's DRAM level itself, whatever the case's share of the copy (extra bytes)
    assert (
        "DRAM runs at 91.2% of peak, about the rate a device copy reaches: no "
        "launch-configuration change will help" in f.text
    )
    assert f.next_step.startswith("fuse it with the ops around it")


@pytest.mark.parametrize(("copy_share", "at_roof"), [(95.0, True), (94.9, False)])
def test_near_the_copy_ceiling_is_inclusive(copy_share: float, at_roof: bool) -> None:
    f = one_case(**STREAM, pct_peak_bw=copy_share)
    assert ("about as fast as a device copy" in f.text) is at_roof
    assert f.evidence["pct_peak_bw"] == copy_share
    # DRAM is the busiest unit: its level is quoted once, in the lead
    assert "DRAM, the busiest memory unit, runs at 80.8% of peak against 41.3%" in f.text
    assert f.text.count("80.8%") == 1
    if not at_roof:
        assert (
            "At 94.9% of the measured copy bandwidth the case is short of a device copy." in f.text
        )


@pytest.mark.parametrize(("dram", "at_roof"), [(85.0, True), (84.9, False)])
def test_near_peak_dram_threshold_is_inclusive(dram: float, at_roof: bool) -> None:
    f = one_case(memory_throughput_pct=92.0, dram_throughput_pct=dram, sm_throughput_pct=30.0)
    assert ("no launch-configuration change" in f.text) is at_roof
    assert ("short of a device copy" in f.text) is not at_roof


def test_short_of_the_copy_with_full_occupancy_is_not_an_occupancy_problem() -> None:
    # counters float noise: 99.99999999999999 is the SM's maximum
    f = one_case(**STREAM, theoretical_occupancy_pct=99.99999999999999,
                 achieved_occupancy_pct=89.7)  # fmt: skip
    assert "Occupancy is not what limits it: theoretical occupancy is already 100.0%" in f.text
    assert "more warps will not help" in f.next_step
    assert "more warps per SM" not in f.next_step


def test_short_of_the_copy_under_full_occupancy_points_at_registers() -> None:
    f = one_case(**STREAM, theoretical_occupancy_pct=75.0, achieved_occupancy_pct=68.0,
                 registers_per_thread=34.0)  # fmt: skip
    assert "Theoretical occupancy is 75.0% at 34 registers per thread (68.0% achieved)" in f.text
    assert f.evidence["registers_per_thread"] == 34
    assert f.next_step.startswith("get more bytes in flight: cut registers per thread")


def test_short_of_the_copy_on_a_grid_under_one_wave_names_the_grid() -> None:
    f = one_case(**STREAM, grid_size=256.0, waves_per_sm=0.48, theoretical_occupancy_pct=100.0,
                 achieved_occupancy_pct=48.7)  # fmt: skip
    assert "Small grid: it launches 256 blocks, 48.0% of the block slots one wave holds" in f.text
    assert "Occupancy is not what limits it" not in f.text and "Low occupancy" not in f.text
    assert f.next_step.startswith("launch more, smaller programs")


def test_a_launch_short_of_the_copy_without_timing() -> None:
    (f,) = explain_launches(pd.DataFrame([{**STREAM, "kernel_name": "k"}]), None)
    assert "DRAM, the busiest memory unit, runs at 80.8% of peak against 41.3% for the SM. " \
        "That is short of the rate a device copy reaches." in f.text  # fmt: skip
    assert f.next_step.startswith("get more bytes in flight: wider (128-bit) loads")


def test_short_of_the_copy_with_occupancy_far_under_theoretical() -> None:
    f = one_case(**STREAM, theoretical_occupancy_pct=100.0, achieved_occupancy_pct=40.0)
    assert "Low occupancy: 40.0% achieved against 100.0% theoretical" in f.text
    assert f.next_step.startswith("balance the work")


def test_memory_bound_on_caches_when_dram_is_far_below_the_busiest_unit() -> None:
    f = one_case(memory_throughput_pct=85.0, dram_throughput_pct=40.0, sm_throughput_pct=30.0)
    assert f.bottleneck == "memory"
    assert "only 40.0% of peak" in f.text
    assert "L1, L2 or shared memory" in f.text
    assert "MemoryWorkloadAnalysis" in f.next_step


def test_extra_dram_passes_are_named_and_come_first() -> None:
    f = one_case(**MEMORY_NEAR_PEAK, dram_bytes=2 * 134217728.0)
    assert f.evidence["dram_over_min_bytes_x"] == 2.0
    assert "268.4 MB through DRAM, 2.0x the 134.2 MB minimum" in f.text
    assert f.next_step.startswith("remove the extra passes")


@pytest.mark.parametrize(("ratio", "excess"), [(1.25, True), (1.24, False)])
def test_extra_dram_passes_threshold_is_inclusive(ratio: float, excess: bool) -> None:
    f = one_case(**STREAM, dram_bytes=ratio * 134217728.0)
    assert ("extra passes" in f.text) is excess
    assert "stayed in L2" not in f.text


def test_extra_passes_of_an_unfused_chain_say_fuse_and_skip_the_in_flight_advice() -> None:
    f = one_case(**STREAM, dram_bytes=9 * 134217728.0, kernel_count=8.0, ncu_duration_ms=1.6,
                 theoretical_occupancy_pct=100.0, achieved_occupancy_pct=90.0)  # fmt: skip
    assert "Its 8 kernels move 1.2 GB through DRAM, 9.0x the 134.2 MB minimum" in f.text
    assert "Occupancy is not what limits it" not in f.text
    assert f.next_step.startswith("fuse the kernels so the data crosses DRAM once")


@pytest.mark.parametrize(("ratio", "in_l2"), [(0.9, False), (0.89, True)])
def test_dram_bytes_under_the_minimum_are_data_left_in_l2(ratio: float, in_l2: bool) -> None:
    f = one_case(**STREAM, dram_bytes=ratio * 134217728.0)
    assert ("the rest stayed in L2" in f.text) is in_l2
    if in_l2:
        assert "ncu counted 119.5 MB through DRAM, 0.9x the 134.2 MB minimum" in f.text


@pytest.mark.parametrize(
    ("tensor", "phrase"),
    [
        (93.0, "bound on the Tensor Cores, busy 93.0%"),
        (80.0, "bound on the Tensor Cores, busy 80.0%"),  # at the line is busy
        (2.0, "FMA/ALU pipes"),
        (45.0, "busy 45.0% of active cycles: part"),
    ],
)
def test_compute_bound_names_tensor_cores_or_fma(tensor: float, phrase: str) -> None:
    f = one_case(memory_throughput_pct=30.0, sm_throughput_pct=88.0, tensor_pipe_pct=tensor)
    assert f.bottleneck == "compute"
    assert f.evidence["tensor_pipe_pct"] == tensor
    assert phrase in f.text


def test_tensor_bound_next_step_is_less_math() -> None:
    f = one_case(memory_throughput_pct=30.0, sm_throughput_pct=88.0, tensor_pipe_pct=95.0)
    assert f.next_step.startswith("do less math")


def test_balanced_between_the_lines() -> None:
    f = one_case(memory_throughput_pct=70.0, sm_throughput_pct=65.0)
    assert f.bottleneck == "balanced"
    assert "SM 65.0% and memory 70.0% of peak are close" in f.text


# --- latency-bound causes -------------------------------------------------------------------------


def test_small_grid_names_the_idle_sms() -> None:
    f = one_case(**LATENCY, waves_per_sm=0.4, grid_size=53.0)
    assert f.bottleneck == "latency"
    assert (f.evidence["grid_size"], f.evidence["sm_count"], f.evidence["idle_sms"]) == (
        53,
        132,
        79,
    )
    assert "Small grid: it launches 53 blocks for 132 SMs, so 79 SMs get no work." in f.text
    assert f.next_step.startswith("launch more, smaller programs")


def test_small_grid_without_the_sm_count_gives_the_wave_share() -> None:
    (f,) = explain_launches(pd.DataFrame([{**LATENCY, "kernel_name": "k", "waves_per_sm": 0.4,
                                           "grid_size": 528.0}]), None)  # fmt: skip
    assert "Small grid: it launches 528 blocks, 40.0% of the block slots one wave holds" in f.text


def test_one_block_decode_launch_leads_with_the_grid_and_claims_no_occupancy() -> None:
    """A 1-block grid caps achieved occupancy itself: no occupancy or short-kernel claim apart."""
    f = one_case(**LATENCY, grid_size=1.0, waves_per_sm=0.000947, kernel_count=1.0,
                 ncu_duration_ms=0.003, achieved_occupancy_pct=12.0,
                 theoretical_occupancy_pct=100.0)  # fmt: skip
    assert "Small grid: it launches 1 block for 132 SMs, so 131 SMs get no work." in f.text
    assert "At 0.003 ms the kernel lasts about as long as a launch costs" in f.text
    assert "Low occupancy" not in f.text and "Short kernel" not in f.text
    assert "0.000947" not in f.text
    assert f.next_step.startswith("at this size the launch is the cost")


@pytest.mark.parametrize(("waves", "small"), [(0.75, True), (0.76, False), (0.97, False)])
def test_a_nearly_full_single_wave_is_not_a_small_grid(waves: float, small: bool) -> None:
    # 1024 blocks cover every one of the 132 SMs: only the share of empty slots can matter
    f = one_case(**LATENCY, waves_per_sm=waves, grid_size=1024.0, achieved_occupancy_pct=20.0,
                 theoretical_occupancy_pct=50.0)  # fmt: skip
    assert ("Small grid" in f.text) is small
    assert ("Low occupancy" in f.text) is not small


def test_one_wave_tail_wastes_most_of_the_last_wave() -> None:
    f = one_case(**LATENCY, waves_per_sm=1.1)
    assert f.evidence["last_wave_fill_pct"] == 10.0
    assert f.evidence["tail_idle_pct"] == 45.0
    assert "Tail effect: 1.1 waves, so the last wave is only 10.0% full" in f.text
    assert f.next_step.startswith("size the grid")


@pytest.mark.parametrize(("waves", "tail"), [(2.0, False), (1.9, False), (4.1, False),
                                             (1.5, True), (2.1, True)])  # fmt: skip
def test_tail_only_when_a_quarter_of_the_slots_idle(waves: float, tail: bool) -> None:
    f = one_case(**LATENCY, waves_per_sm=waves)
    assert ("Tail effect" in f.text) is tail


def test_low_achieved_occupancy_against_theoretical() -> None:
    f = one_case(**LATENCY, achieved_occupancy_pct=20.0, theoretical_occupancy_pct=50.0)
    assert "Low occupancy: 20.0% achieved against 50.0% theoretical" in f.text
    assert f.next_step.startswith("balance the work")


def test_occupancy_at_exactly_half_of_theoretical_is_not_low() -> None:
    f = one_case(**LATENCY, achieved_occupancy_pct=25.0, theoretical_occupancy_pct=50.0)
    assert "Low occupancy" not in f.text
    assert "No launch-shape or occupancy cause" in f.text
    assert "WarpStateStats" in f.next_step


def test_low_theoretical_occupancy() -> None:
    f = one_case(**LATENCY, achieved_occupancy_pct=18.0, theoretical_occupancy_pct=18.75)
    assert "allows only 18.8% theoretical occupancy" in f.text
    assert f.next_step.startswith("cut registers or shared memory")


def test_many_short_kernels_are_launch_overhead() -> None:
    f = one_case(**LATENCY, kernel_count=9.0, ncu_duration_ms=0.018, waves_per_sm=0.5,
                 grid_size=16.0)  # fmt: skip
    assert f.evidence["kernel_count"] == 9
    assert f.evidence["mean_kernel_ms"] == pytest.approx(0.002)
    assert "launches 9 kernels averaging 0.002 ms each" in f.text
    # launch overhead outranks the small grid it also has; a case's grid is its largest launch's
    assert "its largest launch has 16 blocks for 132 SMs" in f.text
    assert f.next_step.startswith("fuse the kernels into one")


def test_many_longer_kernels_are_not_launch_overhead() -> None:
    f = one_case(**LATENCY, kernel_count=9.0, ncu_duration_ms=0.09)
    assert "Launch overhead" not in f.text


def test_a_single_short_kernel() -> None:
    f = one_case(**LATENCY, kernel_count=1.0, ncu_duration_ms=0.003)
    assert "Short kernel: at 0.003 ms" in f.text


# --- position against the measured ceilings -------------------------------------------------------


def test_roofline_memory_side() -> None:
    f = one_case(**MEMORY_NEAR_PEAK, bytes=4e8, flops=1e8, device_p50_ms=0.125, pct_peak_bw=NAN)
    assert f.evidence["arithmetic_intensity_flop_per_byte"] == 0.25
    assert f.evidence["ridge_flop_per_byte"] == 200.0
    assert f.evidence["roofline_pct"] == pytest.approx(80.0)
    assert "0.25 FLOP/B is under the ridge point at 200 FLOP/B" in f.text
    assert "roof is the copy bandwidth; it reaches 80.0% of that roof" in f.text


def test_roofline_memory_side_does_not_repeat_the_copy_share() -> None:
    f = one_case(**MEMORY_NEAR_PEAK, bytes=4e8, flops=1e8, device_p50_ms=0.125, pct_peak_bw=80.0)
    assert f.text.endswith("so its roof is the copy bandwidth.")
    assert "roofline_pct" not in f.evidence


def test_roofline_compute_side() -> None:
    f = one_case(
        memory_throughput_pct=30.0, sm_throughput_pct=88.0, bytes=1e9, flops=8e11, device_p50_ms=2.0
    )
    assert f.evidence["arithmetic_intensity_flop_per_byte"] == 800.0
    assert f.evidence["roofline_pct"] == pytest.approx(50.0)
    assert "over the ridge point" in f.text and "the matmul rate" in f.text


def test_no_roofline_without_ceilings() -> None:
    f = next(
        x for x in explain_run(run_of([case(**MEMORY_NEAR_PEAK)], ceilings={})) if x.kind == "case"
    )
    assert "ridge" not in f.text
    assert "roofline_pct" not in f.evidence


# --- missing counters: timing only --------------------------------------------------------------


def test_timing_only_run_claims_no_bottleneck() -> None:
    rows = [
        case(
            "triton", device_p50_ms=0.05, pct_peak_bw=96.0, **MEMORY_NEAR_PEAK
        ),  # ignored: run says so
        case("eager", baseline=True, device_p50_ms=0.2, pct_peak_bw=23.0),
    ]
    reason = "ncu lacks permission to read GPU counters on this host"
    findings = explain_run(run_of(rows, status="timing_only", reason=reason, fix="see doctor"))
    lab, eager = (f for f in findings if f.kind == "case")
    assert lab.bottleneck is None and eager.bottleneck is None
    assert f"Timing only ({reason})" in lab.text
    assert "-bound" not in lab.text
    assert "At 96.0% of the measured copy bandwidth" in lab.text
    assert lab.next_step.startswith("move fewer bytes")
    assert eager.next_step == "capture counters to see what limits it: see doctor"
    (verdict,) = verdicts(findings)
    assert verdict.verdict == "win"
    assert f"Timing only ({reason}): no counters show why." in verdict.text


@pytest.mark.parametrize(("copy_share", "near"), [(95.0, True), (94.9, False)])
def test_timing_only_copy_line_is_inclusive(copy_share: float, near: bool) -> None:
    findings = explain_run(run_of([case(pct_peak_bw=copy_share)], status="timing_only"))
    f = next(x for x in findings if x.kind == "case")
    assert ("about as fast as a device copy" in f.text) is near


def test_nan_counters_in_a_counted_run_are_timing_only_for_that_case() -> None:
    f = one_case(memory_throughput_pct=NAN, dram_throughput_pct=NAN, sm_throughput_pct=NAN)
    assert f.bottleneck is None
    assert "Timing only (no counters were captured for this case)" in f.text


def test_dram_throughput_stands_in_for_missing_memory_throughput() -> None:
    f = one_case(dram_throughput_pct=85.0, sm_throughput_pct=20.0)
    assert f.bottleneck == "memory"
    assert f.evidence["dram_throughput_pct"] == 85.0


# --- the verdict ------------------------------------------------------------------------------


def sweep(lab_ms: dict[str, float], base_ms: dict[str, float], spread: float = 0.001) -> list[dict]:
    rows = [
        case("triton", shape=s, device_p50_ms=ms, device_iqr_ms=spread) for s, ms in lab_ms.items()
    ]
    rows += [case("eager", baseline=True, shape=s, device_p50_ms=ms, device_iqr_ms=spread)
             for s, ms in base_ms.items()]  # fmt: skip
    return rows


def test_win_with_fusion_evidence() -> None:
    rows = [
        case("triton", device_p50_ms=0.034, kernel_count=1.0, dram_bytes=1.34e8, **MEMORY_NEAR_PEAK),
        case("eager", baseline=True, device_p50_ms=0.2, kernel_count=9.0, dram_bytes=9.1e8,
             memory_throughput_pct=70.0, dram_throughput_pct=65.0, sm_throughput_pct=30.0),
        case("compiled", baseline=True, device_p50_ms=0.05, kernel_count=1.0, dram_bytes=1.5e8),
        case("triton", shape="1024x1024", device_p50_ms=0.005),
        case("eager", baseline=True, shape="1024x1024", device_p50_ms=0.02),
    ]  # fmt: skip
    (v,) = verdicts(explain_run(run_of(rows)))
    assert v.verdict == "win" and v.subject == "rmsnorm"
    assert v.evidence["cases_compared"] == 2
    assert v.evidence["float16 4096x8192 vs compiled: delta_ms"] == pytest.approx(-0.016)
    assert "faster than every baseline timed beside it (eager and compiled) at all 2" in v.text
    assert "smallest margin is 0.016 ms (32.0%) against compiled at float16 4096x8192" in v.text
    assert (
        "Fusion at float16 4096x8192, the largest case: triton's 1 kernel runs at 91.2% of DRAM "
        "peak (50.0% of the measured copy bandwidth) and moves 134.0 MB through DRAM; unfused "
        "eager launches 9 kernels and moves 6.8x those bytes (910.0 MB)." in v.text
    )
    assert v.evidence["float16 4096x8192 eager: kernel_count"] == 9
    assert v.evidence["float16 4096x8192 eager: dram_over_triton_x"] == pytest.approx(9.1 / 1.34)
    assert "compiled launches" not in v.text  # one kernel: no fusion to show
    assert v.next_step is None


def test_counters_without_an_unfused_baseline() -> None:
    rows = [case("triton", device_p50_ms=0.034, kernel_count=1.0, **MEMORY_NEAR_PEAK),
            case("compiled", baseline=True, device_p50_ms=0.05, kernel_count=1.0)]  # fmt: skip
    (v,) = verdicts(explain_run(run_of(rows)))
    assert "Counters at float16 4096x8192, the largest case: triton's 1 kernel runs at" in v.text
    assert "correct and faster than every baseline timed beside it (compiled) at its only" in v.text


def test_incorrect_variant_is_never_a_win() -> None:
    rows = sweep({"4096x8192": 0.03}, {"4096x8192": 0.2, "1024x1024": 0.02})
    rows.append(case("triton", shape="1024x1024", correct=False, device_p50_ms=0.001, rel_err=0.25))
    (v,) = verdicts(explain_run(run_of(rows)))
    assert v.verdict == "not a win"
    assert "an incorrect variant never counts as fast" in v.text
    assert "at float16 1024x1024 it is incorrect (mismatch, rel_err 0.25)" in v.text
    assert v.evidence["float16 1024x1024: rel_err"] == 0.25
    assert v.next_step == "fix correctness at float16 1024x1024 first"


def test_incorrect_case_finding_is_not_judged() -> None:
    f = one_case(correct=False, error="NaN in output, max abs err 0.5", **MEMORY_NEAR_PEAK)
    assert f.bottleneck is None
    assert (
        f.text
        == "Incorrect (NaN in output, max abs err 0.5, rel_err 0.25), so its speed is not judged."
    )
    assert f.evidence == {"error": "NaN in output, max abs err 0.5", "rel_err": 0.25}


def test_tie_within_noise_is_an_active_track() -> None:
    rows = sweep({"4096x8192": 0.03, "1024x1024": 0.0100}, {"4096x8192": 0.2, "1024x1024": 0.0105})
    (v,) = verdicts(explain_run(run_of(rows)))
    assert v.verdict == "active track"
    assert v.evidence["float16 1024x1024 vs eager: outcome"] == "noise"
    assert "correct at all 2 dtype/shapes; beats eager at 1 of 2 and ties at 1." in v.text
    assert (
        "1 comparison ties within the timing spread: 0.0005 ms (4.8%) faster than eager at "
        "float16 1024x1024, inside its 0.001 ms spread." in v.text
    )
    assert "Losses" not in v.text


@pytest.mark.parametrize(("base_ms", "verdict"), [(0.75, "active track"), (0.875, "win")])
def test_difference_equal_to_the_spread_is_noise(base_ms: float, verdict: str) -> None:
    rows = sweep({"4096x8192": 0.5}, {"4096x8192": base_ms}, spread=0.25)
    assert verdicts(explain_run(run_of(rows)))[0].verdict == verdict


@pytest.mark.parametrize(
    ("ms", "ref", "spread", "ref_spread", "outcome"),
    [
        (1.0, 1.25, 0.25, 0.0, "noise"),
        (1.0, 1.5, 0.25, 0.1, "faster"),
        (1.5, 1.0, 0.1, 0.25, "slower"),
        (1.0, 1.0001, NAN, None, "faster"),  # no spread known: any difference counts
        (1.0, 1.0, None, None, "noise"),
    ],
)
def test_timing_outcome(ms: float, ref: float, spread, ref_spread, outcome: str) -> None:
    assert timing_outcome(ms, ref, spread, ref_spread) == outcome


def test_active_track_names_the_loss_and_the_next_step_from_its_counters() -> None:
    rows = [
        case("triton", device_p50_ms=0.03),
        case("eager", baseline=True, device_p50_ms=0.2),
        case("triton", shape="1024x1024", device_p50_ms=0.012, device_iqr_ms=0.0005, **LATENCY,
             waves_per_sm=0.25, grid_size=33.0),
        case("eager", baseline=True, shape="1024x1024", device_p50_ms=0.010, device_iqr_ms=0.0005),
    ]  # fmt: skip
    (v,) = verdicts(explain_run(run_of(rows)))
    assert v.verdict == "active track"
    assert (
        "loses to eager at 1 of 2, by up to 20.0% (worst: float16 1024x1024), beats it at 1."
        in v.text
    )
    assert "Losses to eager: float16 1024x1024 by 20.0%." in v.text
    assert v.evidence["float16 1024x1024 vs eager: delta_pct"] == pytest.approx(20.0)
    # the baseline has no counters: the lab case's own next step
    assert v.next_step.startswith("At float16 1024x1024 against eager: launch more, smaller")


def test_slower_everywhere_is_not_a_win() -> None:
    rows = sweep({"4096x8192": 0.3, "1024x1024": 0.03}, {"4096x8192": 0.2, "1024x1024": 0.02})
    (v,) = verdicts(explain_run(run_of(rows)))
    assert v.verdict == "not a win"
    assert "but at every one a baseline is faster beyond the timing spread" in v.text
    assert "loses to eager at 2 of 2, by up to 50.0% (worst: float16 4096x8192)." in v.text
    assert "Losses to eager: float16 4096x8192 by 50.0%, 1024x1024 by 50.0%." in v.text


def test_beating_one_baseline_but_losing_to_another_everywhere_is_not_a_win() -> None:
    rows = sweep({"4096x8192": 0.1}, {"4096x8192": 0.2})
    rows.append(case("compiled", baseline=True, device_p50_ms=0.05))
    (v,) = verdicts(explain_run(run_of(rows)))
    assert v.verdict == "not a win"
    # the baseline it beats comes first
    assert (
        "correct at its only dtype/shape, but there a baseline is faster beyond the timing "
        "spread; beats eager; loses to compiled by 100.0% (at float16 4096x8192)." in v.text
    )
    assert "Losses to compiled: float16 4096x8192 by 100.0%." in v.text


def test_losses_grouped_by_baseline_and_dtype_and_ties_counted() -> None:
    rows = []
    for dtype in ("float16", "float32"):
        for shape, lab, native, compiled in (("64x64", 0.010, 0.020, 0.0101),
                                             ("4096x8192", 0.110, 0.200, 0.100),
                                             ("16384x8192", 0.440, 0.800, 0.400)):  # fmt: skip
            rows += [
                case("triton", dtype=dtype, shape=shape, device_p50_ms=lab),
                case("native", baseline=True, dtype=dtype, shape=shape, device_p50_ms=native),
                case("compiled", baseline=True, dtype=dtype, shape=shape, device_p50_ms=compiled),
            ]
    (v,) = verdicts(explain_run(run_of(rows)))
    assert v.verdict == "active track"
    assert (
        "triton is an active track: correct at all 6 dtype/shapes; beats native at all 6; loses "
        "to compiled at 4 of 6, by up to 10.0% (worst: float16 4096x8192), ties at 2." in v.text
    )
    assert (
        "Losses to compiled: float16 4096x8192 by 10.0%, 16384x8192 by 10.0%; float32 4096x8192 "
        "by 10.0%, 16384x8192 by 10.0%." in v.text
    )
    assert "2 comparisons tie within the timing spread; the widest gap among them is" in v.text
    assert v.evidence["vs compiled: slower"] == 4 and v.evidence["ties"] == 2


# --- the verdict's next step: the lab case's counters beside the winning baseline's ---------------

# the lab kernel and compile at 16384x8192 on the H200 (profiles/rmsnorm-20261130-014917-vm-4bc5)
SAME_LAUNCH = {"grid_size": 16384.0, "block_size": 512.0, "waves_per_sm": 31.03}
LAB = {**STREAM, **SAME_LAUNCH, "bytes": 536887296.0, "dram_bytes": 5.11e8, "kernel_count": 1.0}
WINNER = {**LAB, "memory_throughput_pct": 86.6, "dram_throughput_pct": 86.6,
          "theoretical_occupancy_pct": 100.0, "achieved_occupancy_pct": 92.6,
          "registers_per_thread": 23.0}  # fmt: skip


def loss_step(lab: dict, winner: dict) -> Finding:
    rows = [case("triton", shape="16384x8192", device_p50_ms=0.1398, device_iqr_ms=0.0014, **lab),
            case("compile", baseline=True, shape="16384x8192", device_p50_ms=0.1282, device_iqr_ms=0.0013,
                 **winner)]  # fmt: skip
    (v,) = verdicts(explain_run(run_of(rows)))
    assert v.verdict == "not a win"
    return v


def test_same_launch_full_occupancy_lower_dram_points_at_load_width() -> None:
    lab = {**LAB, "theoretical_occupancy_pct": 100.0, "achieved_occupancy_pct": 93.4,
           "registers_per_thread": 32.0}  # fmt: skip
    v = loss_step(lab, WINNER)
    assert v.next_step == (
        "At float16 16384x8192 against compile: occupancy is not the limiter: with the same launch "
        "as compile (16384 blocks of 512 threads), triton holds 93.4% achieved occupancy (100.0% "
        "theoretical at 32 registers per thread) against compile's 92.6% (100.0% at 23), yet its "
        "DRAM runs at 80.8% of peak against 86.6%; inspect the SASS for load width (128-bit "
        "LDG.E.128 or narrower) and for how many loads each thread keeps in flight (memory-level "
        "parallelism); more warps will not help."
    )
    assert v.evidence["float16 16384x8192 triton: dram_throughput_pct"] == 80.8
    assert v.evidence["float16 16384x8192 compile: achieved_occupancy_pct"] == 92.6


def test_lower_theoretical_occupancy_at_more_registers_says_cut_registers() -> None:
    lab = {**LAB, "theoretical_occupancy_pct": 75.0, "achieved_occupancy_pct": 68.0,
           "registers_per_thread": 34.0}  # fmt: skip
    step = loss_step(lab, WINNER).next_step
    assert (
        "triton's theoretical occupancy is 75.0% at 34 registers per thread (68.0% achieved) "
        "against compile's 100.0% at 23 registers per thread (92.6% achieved)" in step
    )
    assert step.endswith("cut registers per thread (fewer values live per thread: more threads "
                         "per block, or a loop over the data in chunks).")  # fmt: skip
    assert "not the limiter" not in step


@pytest.mark.parametrize(("achieved", "cause"), [(82.6, "not the limiter"),
                                                 (82.5, "cut registers")])  # fmt: skip
def test_occupancy_gap_of_exactly_ten_points_is_not_the_cause(achieved: float, cause: str) -> None:
    lab = {**LAB, "theoretical_occupancy_pct": 75.0, "achieved_occupancy_pct": achieved,
           "registers_per_thread": 34.0}  # fmt: skip
    assert cause in loss_step(lab, WINNER).next_step


def test_extra_dram_bytes_against_the_winner_say_remove_passes() -> None:
    lab = {**LAB, "dram_bytes": 1.25 * 5.11e8}
    step = loss_step(lab, WINNER).next_step
    assert step.startswith("At float16 16384x8192 against compile: it moves 1.2x the DRAM bytes")
    assert "(638.8 MB against 511.0 MB): remove the extra passes over the data." in step


def test_a_launch_shape_only_the_lab_case_has_gives_its_own_step() -> None:
    lab = {**LAB, "waves_per_sm": 1.1, "grid_size": 581.0, "theoretical_occupancy_pct": 100.0,
           "achieved_occupancy_pct": 93.4}  # fmt: skip
    v = loss_step(lab, WINNER)
    assert v.next_step.startswith(
        "At float16 16384x8192 against compile: tail effect: 1.1 waves, so the last wave is only "
        "10.0% full and 45.0% of the launch's block slots sit idle, a cost compile's launch does "
        "not have: size the grid"
    )
    assert v.evidence["float16 16384x8192 triton: tail_idle_pct"] == 45.0


def test_losses_with_different_causes_get_one_sentence_each_worst_first() -> None:
    full = {**LAB, "theoretical_occupancy_pct": 100.0, "achieved_occupancy_pct": 93.4}
    capped = {**LAB, "theoretical_occupancy_pct": 50.0, "achieved_occupancy_pct": 45.0,
              "registers_per_thread": 64.0}  # fmt: skip
    rows = []
    for shape, lab, lab_ms in (("16384x8192", full, 0.14), ("4096x8192", capped, 0.05),
                               ("2048x16384", capped, 0.044)):  # fmt: skip
        rows += [case("triton", shape=shape, device_p50_ms=lab_ms, **lab),
                 case("compile", baseline=True, shape=shape, device_p50_ms=0.04 if lab is capped
                      else 0.128, **WINNER)]  # fmt: skip
    (v,) = verdicts(explain_run(run_of(rows)))
    first, second = v.next_step.split(". At ")
    assert first.startswith("At float16 4096x8192 against compile (also float16 2048x16384):")
    assert "cut registers per thread" in first
    assert second.startswith("float16 16384x8192 against compile: occupancy is not the limiter")


def test_no_counters_anywhere_falls_back_to_the_case_step() -> None:
    rows = sweep({"4096x8192": 0.3}, {"4096x8192": 0.2})
    (v,) = verdicts(explain_run(run_of(rows, status="timing_only", reason="no permission")))
    step = "At float16 4096x8192 against eager: capture counters to see what limits it."
    assert v.next_step == step


def test_each_lab_variant_is_judged() -> None:
    rows = sweep({"4096x8192": 0.1}, {"4096x8192": 0.2})
    rows.append(case("triton_v2", device_p50_ms=0.3))
    vs = verdicts(explain_run(run_of(rows)))
    assert [(v.subject, v.variant, v.verdict) for v in vs] == [
        ("rmsnorm triton", "triton", "win"),
        ("rmsnorm triton_v2", "triton_v2", "not a win"),
    ]


def test_no_baseline_no_verdict_and_uncompared_shapes_are_named() -> None:
    (alone,) = verdicts(explain_run(run_of([case()])))
    assert alone.verdict is None and "no baseline" in alone.text
    rows = sweep({"4096x8192": 0.1, "64x64": 0.01}, {"4096x8192": 0.2})
    (v,) = verdicts(explain_run(run_of(rows)))
    assert v.verdict == "win"
    assert "No baseline was timed at float16 64x64" in v.text


def test_findings_come_verdict_first_per_kernel() -> None:
    rows = sweep({"4096x8192": 0.1}, {"4096x8192": 0.2})
    rows.append(dict(case("torch", baseline=True), kernel="softmax"))
    rows.append(dict(case("triton", device_p50_ms=0.05), kernel="softmax"))
    kinds = [(f.kernel, f.kind) for f in explain_run(run_of(rows))]
    assert kinds == [("rmsnorm", "verdict"), ("rmsnorm", "case"), ("rmsnorm", "case"),
                     ("softmax", "verdict"), ("softmax", "case"), ("softmax", "case")]  # fmt: skip


# --- every number in a text comes from its evidence --------------------------------------------

_NUMBER = re.compile(r"(?<![\w.])\d+(?:,\d{3})*(?:\.\d+)?")
# fixed vocabulary, not measured figures: "128-bit loads", "LDG.E.128"
CONSTANTS = {"128"}


def _numbers(text: str) -> set[str]:
    return set(_NUMBER.findall(text))


def test_every_number_in_text_is_in_the_evidence() -> None:
    rows = [
        case("triton", device_p50_ms=0.034, kernel_count=1.0, dram_bytes=2.7e8, **MEMORY_NEAR_PEAK),
        case("eager", baseline=True, device_p50_ms=0.2, kernel_count=9.0, dram_bytes=9.1e8,
             ncu_duration_ms=0.018, **LATENCY),
        case("triton", shape="1024x1024", device_p50_ms=0.012, **LATENCY, waves_per_sm=1.1,
             achieved_occupancy_pct=20.0, theoretical_occupancy_pct=50.0),
        case("eager", baseline=True, shape="1024x1024", device_p50_ms=0.0121),
        case("triton", shape="2048x2048", device_p50_ms=0.02, memory_throughput_pct=30.0,
             sm_throughput_pct=88.0, tensor_pipe_pct=93.0),
        case("eager", baseline=True, shape="2048x2048", device_p50_ms=0.018),
        case("triton", shape="64x64", correct=False, error="rel_err 0.3 over tolerance 0.01"),
    ]  # fmt: skip
    findings = explain_run(run_of(rows))
    assert len(findings) == 8
    launch = {"launch": 3, "kernel_name": "k", "ncu_duration_ms": 0.002, "dram_bytes": 1e6}
    findings += explain_launches(pd.DataFrame([{**launch, **LATENCY}]), None, CEILINGS)
    lab = {**LAB, "theoretical_occupancy_pct": 75.0, "achieved_occupancy_pct": 68.0,
           "registers_per_thread": 34.0}  # fmt: skip
    findings.append(loss_step(lab, WINNER))
    for f in findings:
        allowed = _numbers(f.subject) | CONSTANTS
        for key, value in f.evidence.items():
            allowed |= _numbers(key) | _numbers(format_value(key, value))
        for said in (f.text, f.next_step or ""):
            assert _numbers(said) <= allowed, (f.subject, _numbers(said) - allowed)


def test_format_value_units() -> None:
    assert format_value("device_p50_ms", 0.0342) == "0.0342 ms"
    assert format_value("dram_throughput_pct", 90.94) == "90.9%"
    assert format_value("pct_peak_bw", 78.06) == "78.1%"
    assert format_value("kernel_count", 4) == "4"
    assert format_value("dram_bytes", 33554432.0) == "33.6 MB"
    assert format_value("copy_gbps", 4230.0) == "4230 GB/s"
    assert format_value("ridge_flop_per_byte", 165.48) == "165 FLOP/B"
    assert format_value("waves_per_sm", 1.10) == "1.1"
    assert format_value("pct_peak_bw", 0.0251) == "<0.1%"  # not "0.0%"
    assert format_value("sm_throughput_pct", 0.05) == "0.1%"
    assert format_value("sm_throughput_pct", 0.0) == "0.0%"


# --- NVIDIA's own rule messages ---------------------------------------------------------------


def rules_table() -> pd.DataFrame:
    rmsnorm = "rmsnorm.triton.float16.4096x8192"
    message = (
        "This kernel grid is too small to fill the available resources on this device, resulting "
        "in only 0.4 full waves across all SMs. Look at @section:LaunchStats:Launch Statistics@ "
        "for more details."
    )
    columns = ["launch", "case", "kernel_name", "section", "rule", "type", "message", "speedup_pct"]
    return pd.DataFrame(
        [
            [0, rmsnorm, "rms_k", "SpeedOfLight", "SOLBottleneck", "OPTIMIZATION", message, 60.0],
            [1, rmsnorm, "rms_k", "SpeedOfLight", "SOLBottleneck", "OPTIMIZATION", message, 60.0],
            [0, rmsnorm, "rms_k", "Occupancy", "AchievedOccupancy", "OK", "fine", NAN],
            [0, rmsnorm, "rms_k", "LaunchStats", "LaunchConfig", "WARNING", "few blocks", NAN],
            [2, "other.case", "x_k", "SpeedOfLight", "SOLBottleneck", "WARNING", "other", NAN],
        ],
        columns=columns,
    )


def test_nvidia_rules_quoted_beside_the_finding() -> None:
    findings = explain_run(run_of([case(**LATENCY, waves_per_sm=0.4)], rules=rules_table()))
    f = next(x for x in findings if x.kind == "case")
    assert f.nvidia_rules == [
        "SOLBottleneck: This kernel grid is too small to fill the available resources on this "
        "device, resulting in only 0.4 full waves across all SMs. Look at Launch Statistics for "
        "more details. (NVIDIA's estimated speedup: 60%) (raised for 2 launches; the one with the "
        "largest estimated speedup is quoted)",
        "LaunchConfig: few blocks",
    ]


def test_a_rule_raised_per_launch_is_quoted_once_from_the_launch_nvidia_expects_most_of() -> None:
    case_name = "rmsnorm.eager.float16.4096x8192"
    columns = ["launch", "case", "rule", "type", "message", "speedup_pct"]
    rules = pd.DataFrame(
        [[launch, case_name, "AchievedOccupancy", "OPTIMIZATION", f"gap {launch}", speedup]
         for launch, speedup in ((1, 40.0), (2, 93.2), (3, 77.8))], columns=columns
    )  # fmt: skip
    findings = explain_run(run_of([case("eager", baseline=True, **LATENCY)], rules=rules))
    (f,) = [x for x in findings if x.kind == "case"]
    assert f.nvidia_rules == [
        "AchievedOccupancy: gap 2 (NVIDIA's estimated speedup: 93.2%) (raised for 3 launches; the "
        "one with the largest estimated speedup is quoted)"
    ]


# --- launches of a report brought from elsewhere --------------------------------------------------


def test_explain_launches() -> None:
    kernels = pd.DataFrame(
        [
            {"case": NAN, "kernel": NAN, "launch": 0, "kernel_name": "copy_kernel",
             "ncu_duration_ms": 0.1, "dram_bytes": 4e8, "kernel_count": 1, **MEMORY_NEAR_PEAK},
            {"case": NAN, "kernel": NAN, "launch": 1, "kernel_name": "tiny_kernel",
             "ncu_duration_ms": 0.002, "kernel_count": 1, **LATENCY},
            {"case": NAN, "kernel": NAN, "launch": 2, "kernel_name": "mystery"},
        ]
    )  # fmt: skip
    rules = rules_table().assign(case=NAN)
    copy, tiny, mystery = explain_launches(kernels, rules, CEILINGS)
    assert [f.kind for f in (copy, tiny, mystery)] == ["launch"] * 3
    assert (copy.subject, copy.kernel, copy.bottleneck) == ("copy_kernel", "copy_kernel", "memory")
    assert copy.evidence["dram_gbps"] == pytest.approx(4000.0)
    assert copy.evidence["copy_ceiling_pct"] == pytest.approx(100.0)
    assert "ncu measured 0.1 ms." in copy.text
    assert "It moves 4000 GB/s through DRAM, 100.0% of the measured copy ceiling" in copy.text
    assert len(copy.nvidia_rules) == 2  # launch 0: SOLBottleneck and LaunchConfig
    assert tiny.bottleneck == "latency" and "Short kernel: at 0.002 ms" in tiny.text
    assert tiny.text.count("0.002 ms") == 1
    assert tiny.nvidia_rules == [copy.nvidia_rules[0]]
    assert mystery.bottleneck is None
    assert mystery.text == "No throughput counters were captured for this launch."
    assert explain_launches(kernels.iloc[:1], None)[0].evidence.get("dram_gbps") is None


# --- output -------------------------------------------------------------------------------------


def win_findings() -> list[Finding]:
    rows = [
        case(
            "triton", device_p50_ms=np.float64(0.034), kernel_count=np.int64(1), **MEMORY_NEAR_PEAK
        ),
        case("eager", baseline=True, device_p50_ms=0.2, kernel_count=9.0),
    ]
    return explain_run(run_of(rows, rules=rules_table()))


def test_json_output_keys_and_types() -> None:
    out = json.loads(to_json(win_findings()))
    assert isinstance(out, list) and len(out) == 3
    for item in out:
        assert {"subject", "kind", "bottleneck", "verdict", "evidence", "text", "next_step",
                "nvidia_rules"} <= set(item)  # fmt: skip
    assert out[0]["verdict"] == "win"
    assert out[1]["bottleneck"] == "memory"
    assert out[1]["evidence"]["device_p50_ms"] == 0.034
    assert out[1]["case"] == "rmsnorm.triton.float16.4096x8192"


def test_markdown_output() -> None:
    md = to_markdown(win_findings())
    assert md.startswith("### rmsnorm\n")
    assert "**rmsnorm: win.** triton is a win" in md
    assert "- **rmsnorm triton float16 4096x8192** (memory-bound): p50 0.034 ms" in md
    assert "  - *Next:* fuse it with the ops around it" in md
    assert "  - NVIDIA LaunchConfig: few blocks" in md
    assert md.index("win.**") < md.index("- **rmsnorm triton")


def test_terminal_output() -> None:
    console = Console(file=io.StringIO(), width=200, record=True)
    render_terminal(win_findings(), console)
    out = console.export_text()
    assert "rmsnorm" in out and "WIN" in out and "memory-bound" in out
    assert out.index("WIN") < out.index("rmsnorm triton float16 4096x8192")
    assert "next: fuse it with the ops around it" in out


# --- the same analysis on a run read back from disk ----------------------------------------------


def test_run_read_back_from_csv(tmp_path: Path) -> None:
    """CSV turns an empty `error` into NaN and a bool column with blanks into text."""
    rows = sweep({"4096x8192": 0.1}, {"4096x8192": 0.2})
    rows.append(case("triton", shape="1024x1024", correct=False))
    mem = run_of(rows)
    (tmp_path / "manifest.json").write_text(json.dumps(mem.manifest))
    mem.cases.to_csv(tmp_path / "cases.csv", index=False)
    disk = store.load(tmp_path)
    assert [f.to_dict() for f in explain_run(disk)] == [f.to_dict() for f in explain_run(mem)]
    assert verdicts(explain_run(disk))[0].verdict == "not a win"
