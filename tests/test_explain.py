"""profkit.explain on small constructed tables: every rule path, asserted on the structure.

The tables are built in-test with every column docs/tables.md lists (constructed, not measured);
the committed H200 runs and reports are checked in test_explain_real.py, the hold-out suite in
test_explain_suite.py.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pandas as pd
import pytest
from case_columns import CASE_COLUMNS, NAN
from rich.console import Console
from stored_runs import all_runs

from profkit import store
from profkit import thresholds as th
from profkit.explain import (
    Action,
    Bottleneck,
    Cause,
    Finding,
    FindingKind,
    Unit,
    Verdict,
    classify,
    explain_launches,
    explain_run,
    format_value,
)
from profkit.explain import kernel_family as lib
from profkit.explain import run as explain_run_module
from profkit.explain.as_json import finding_dict
from profkit.explain.phrases import advice_text, finding_text, first_advice_text
from profkit.explain.render import render_terminal, to_json, to_markdown

CEILINGS = {"copy_gbps": 4000.0, "matmul_tflops": 800.0, "matmul_dtype": "bfloat16"}
SM_COUNT = 132
GOLDEN = Path(__file__).parent / "golden"


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
    """One cases.csv row: every documented column, counters empty unless given."""
    row = dict.fromkeys(CASE_COLUMNS, NAN)
    timed = correct or device_p50_ms is not None
    p50 = (0.1 if device_p50_ms is None else device_p50_ms) if timed else NAN
    row.update(
        kernel="rmsnorm", variant=variant, baseline=baseline, dtype=dtype, shape=shape,
        case=f"rmsnorm.{variant}.{dtype}.{shape}", correct=correct,
        rel_err=1e-4 if correct else 0.25, max_abs_err=1e-3, error="" if correct else "mismatch",
        device_reps=100, device_p50_ms=p50, device_p95_ms=p50, device_p5_ms=p50,
        device_iqr_ms=device_iqr_ms if timed else NAN,
        bytes=134217728.0, flops=100663296.0, pct_peak_bw=50.0,
    )  # fmt: skip
    row.update(columns)
    return row


def run_of(
    rows: list[dict],
    *,
    status: str = "ok",
    reason: str = "",
    kernels: pd.DataFrame | None = None,
    rules: pd.DataFrame | None = None,
    manifest: dict | None = None,
    path: Path = Path("rmsnorm-test"),
) -> store.Run:
    body = {
        "schema": 2, "run_id": path.name, "kernel": "rmsnorm", "complete": True, "mode": "gpu",
        "created": "2026-11-30T12:00:00+00:00", "ceilings": CEILINGS,
        "counters": {"status": status, "reason": reason, "fix": ""},
        "fingerprint": {"gpu": "NVIDIA H200", "sm_count": SM_COUNT, "compute_capability": "9.0"},
    }  # fmt: skip
    body.update(manifest or {})
    return store.Run(path, body, pd.DataFrame(rows), kernels, rules)


@pytest.fixture(autouse=True)
def no_notebook(monkeypatch: pytest.MonkeyPatch) -> None:
    """Constructed runs read no lab notebook unless a test gives one."""
    monkeypatch.setattr(explain_run_module, "_notebook_dir", lambda: None)


def one_case(**columns: object) -> Finding:
    """The finding for a single lab case (no baseline)."""
    report = explain_run(run_of([case(**columns)]))
    return next(f for f in report if f.kind == FindingKind.CASE)


def causes(f: Finding) -> list[Cause]:
    return [r.cause for r in f.reasons]


def actions(f: Finding) -> list[Action]:
    return [s.action for s in f.next]


MEMORY = {"memory_throughput_pct": 92.0, "dram_throughput_pct": 91.2, "sm_throughput_pct": 35.0}
STREAM = {"memory_throughput_pct": 80.8, "dram_throughput_pct": 80.8, "sm_throughput_pct": 41.3,
          "theoretical_occupancy_pct": 100.0, "achieved_occupancy_pct": 90.0,
          "waves_per_sm": 31.0, "grid_size": 16384.0}  # fmt: skip
LATENCY = {"memory_throughput_pct": 25.0, "dram_throughput_pct": 20.0, "sm_throughput_pct": 20.0}
COMPUTE = {"memory_throughput_pct": 30.0, "dram_throughput_pct": 30.0, "sm_throughput_pct": 92.0}


# --- the speed-of-light decision ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("memory", "sm", "expected"),
    [
        (80.0, 10.0, "memory"),
        (80.0, 75.0, "memory"),
        (79.9, 75.0, "balanced"),
        (75.0, 80.0, "compute"),
        (85.0, 85.0, "compute"),  # both high and equal: ncu names compute
        (60.0, 60.0, "balanced"),
        (59.9, 59.9, "latency"),
        (70.0, 60.0, "memory"),  # a gap of exactly 10 names the higher side
        (65.3, 55.3, "memory"),  # 9.999999... in floats is still a 10-point gap
        (69.9, 60.0, "balanced"),
    ],
)
def test_classify_follows_ncu_speed_of_light(memory: float, sm: float, expected: str) -> None:
    assert classify(memory, sm) == Bottleneck(expected)


# --- memory: the roof, judged against a same-size copy where the run has one -------------------


@pytest.mark.parametrize(("share", "at_roof"), [(95.0, True), (94.9, False)])
def test_at_the_large_copy_roof_says_only_fewer_bytes(share: float, at_roof: bool) -> None:
    # bytes / p50 against copy_gbps 4000: p50 chosen so the case reaches `share` of it
    p50 = 134217728.0 / (share / 100 * 4000e9) * 1e3
    f = one_case(device_p50_ms=p50, **STREAM)
    assert f.bottleneck == Bottleneck.MEMORY and f.unit == Unit.DRAM
    assert (Cause.AT_ROOF in causes(f)) is at_roof
    assert (Action.FEWER_BYTES in actions(f)) is at_roof
    assert f.evidence["same_size_roof"] == "unknown"  # no same-size copy in this run
    assert f.evidence["pct_of_copy_pct"] == pytest.approx(share)
    if at_roof:
        assert "judged against the large one" in finding_text(f)


def test_a_same_size_copy_is_the_roof_where_measured() -> None:
    # 85% of the large copy, but 97% of what a copy of the same 134 MB reached
    p50 = 134217728.0 / (0.85 * 4000e9) * 1e3
    f = one_case(device_p50_ms=p50, copy_gbps_same_size=0.85 * 4000 / 0.97, **STREAM)
    assert Cause.AT_ROOF in causes(f)
    assert f.evidence["pct_of_same_size_copy_pct"] == pytest.approx(97.0)
    assert f.evidence["pct_of_copy_pct"] == pytest.approx(85.0)
    assert "same_size_roof" not in f.evidence
    assert "97.0% of a same-size device copy (85.0% of the large copy)" in finding_text(f)


@pytest.mark.parametrize(("share", "at_roof"), [(95.0, True), (94.9, False)])
def test_a_latency_bound_case_at_the_same_size_copy_keeps_no_stream_steps(
    share: float, at_roof: bool
) -> None:
    # a short stream (latency-bound, long scoreboard, a grid under one wave) as fast as a copy
    # of its bytes: the copy has the same limits at that size, so no latency or grid advice
    stalls = {"stall_long_scoreboard_pct": 60.0, "waves_per_sm": 0.4, "grid_size": 100.0}
    same = 0.30 * 4000  # GB/s a copy of these bytes reached
    p50 = 134217728.0 / (share / 100 * same * 1e9) * 1e3
    f = one_case(device_p50_ms=p50, copy_gbps_same_size=same, **LATENCY, **stalls)
    assert f.bottleneck == Bottleneck.LATENCY
    assert (Cause.AT_SIZE_ROOF in causes(f)) is at_roof
    steps = set(actions(f))
    assert bool(steps & {Action.HIDE_LATENCY, Action.MORE_PROGRAMS}) is not at_roof
    if at_roof:
        assert actions(f)[0] == Action.FEWER_BYTES
        assert Cause.SMALL_GRID in causes(f)  # still said: a fact, with no step of its own


def test_a_launch_without_timing_is_at_the_roof_by_dram_peak() -> None:
    kernels = pd.DataFrame([{"launch": 0, "kernel_name": "k", **MEMORY}])
    (f,) = list(explain_launches(kernels, None))
    assert f.kind == FindingKind.LAUNCH and Cause.AT_ROOF in causes(f)
    assert actions(f)[0] == Action.FEWER_BYTES


def test_short_of_the_roof_with_nothing_else_asks_for_bytes_in_flight_and_stalls() -> None:
    f = one_case(**STREAM)
    assert causes(f)[:2] == [Cause.SHORT_OF_ROOF, Cause.NO_CAUSE_SEEN]
    assert actions(f) == [Action.BYTES_IN_FLIGHT, Action.PROFILE_STALLS]


@pytest.mark.parametrize(
    ("stall", "action"),
    [
        ("long_scoreboard", Action.HIDE_LATENCY),
        ("barrier", Action.FEWER_BARRIERS),
        ("lg_throttle", Action.WIDER_LOADS),
        ("mio_throttle", Action.SHARED_PRESSURE),
        ("wait", Action.ILP),
    ],
)
def test_the_dominant_stall_gives_the_next_step(stall: str, action: Action) -> None:
    stalls = {f"stall_{r}_pct": 5.0 for r in ("long_scoreboard", "barrier", "wait")}
    stalls[f"stall_{stall}_pct"] = 40.0
    stalls["stall_not_selected_pct"] = 500.0  # never counted: a peer was eligible
    f = one_case(**STREAM, **stalls)
    stall_reason = next(r for r in f.reasons if r.cause == Cause.STALL)
    assert stall_reason.detail["stall"] == stall
    assert actions(f)[0] == action
    assert Action.PROFILE_STALLS not in actions(f)


def test_no_stall_dominates_under_the_share() -> None:
    stalls = {f"stall_{r}_pct": 10.0 for r in ("long_scoreboard", "barrier", "wait", "drain")}
    f = one_case(**STREAM, **stalls)
    assert Cause.STALL not in causes(f)
    assert actions(f) == [Action.BYTES_IN_FLIGHT]  # stalls were captured: no "capture them"


def test_short_of_the_roof_on_a_grid_under_one_wave_names_the_grid() -> None:
    f = one_case(**{**STREAM, "waves_per_sm": 0.5, "grid_size": 64.0})
    assert Cause.SMALL_GRID in causes(f)
    assert f.evidence["idle_sms"] == SM_COUNT - 64
    assert Action.MORE_PROGRAMS in actions(f)


def test_cache_bound_names_the_busy_level() -> None:
    f = one_case(memory_throughput_pct=90.0, dram_throughput_pct=30.0, sm_throughput_pct=20.0,
                 l1_throughput_pct=90.0, l2_throughput_pct=40.0)  # fmt: skip
    assert f.unit == Unit.L1
    (r,) = [r for r in f.reasons if r.cause == Cause.CACHE_BOUND]
    assert r.detail["level"] == "l1" and "L1" in finding_text(f)


@pytest.mark.parametrize(("ratio", "extra"), [(1.25, True), (1.24, False)])
def test_reads_over_the_fewest_any_variant_reads_are_a_re_read(ratio: float, extra: bool) -> None:
    rows = [
        case("triton", **STREAM, dram_bytes_read=67.1e6 * ratio, dram_bytes_write=41e6),
        case("compile", baseline=True, **STREAM, dram_bytes_read=67.1e6, dram_bytes_write=41e6),
    ]
    (f,) = [
        f for f in explain_run(run_of(rows)) if f.kind == FindingKind.CASE and f.variant == "triton"
    ]
    assert (Cause.EXTRA_READS in causes(f)) is extra
    if extra:
        assert actions(f)[0] == Action.REMOVE_EXTRA_READS
        assert f.evidence["dram_read_over_floor_x"] == pytest.approx(ratio)
        assert f.evidence["fewest_bytes_read"] == pytest.approx(67.1e6)


def test_the_models_read_bytes_win_over_the_siblings() -> None:
    f = one_case(**STREAM, dram_bytes_read=100e6, bytes_read=67e6)
    assert Cause.EXTRA_READS in causes(f) and f.evidence["model_bytes_read"] == 67e6


@pytest.mark.parametrize(("ratio", "in_l2"), [(0.89, True), (0.9, False)])
def test_dram_bytes_under_the_model_are_data_left_in_l2(ratio: float, in_l2: bool) -> None:
    f = one_case(**STREAM, dram_bytes=134217728.0 * ratio)
    assert (Cause.DATA_IN_L2 in causes(f)) is in_l2


def test_uncoalesced_access_against_the_model() -> None:
    # the model: read 67 MB, write 67 MB; a coalesced stream fetches exactly those sectors
    half = 134217728.0 / 2 / 32
    f = one_case(**LATENCY, global_ld_sectors=half, global_st_sectors=half, global_ld_requests=1e5)
    assert Cause.UNCOALESCED not in causes(f)
    # a stride-8 fp32 read fetches a 32-byte sector per 4-byte element: 8x the read sectors
    strided = {"global_ld_sectors": 8 * half, "global_st_sectors": half, "global_ld_requests": 1e5}
    f = one_case(**LATENCY, **strided, l2_throughput_pct=70.0)
    assert Cause.UNCOALESCED in causes(f) and Action.COALESCE in actions(f)
    assert f.evidence["sectors_over_model_x"] > th.UNCOALESCED_SECTOR_RATIO
    # with every memory level under the latency line the wasted sectors cost no time: named as a
    # fact, with no step (the zoo's pointer chase: 8x the ideal sectors at 9% DRAM, 17% L2)
    f = one_case(**LATENCY, **strided, l2_throughput_pct=30.0)
    assert Cause.UNCOALESCED in causes(f) and Action.COALESCE not in actions(f)


def test_coalescing_is_judged_against_the_ideal_sectors_of_the_requested_bytes() -> None:
    # tiles re-read A and B from L2 by design: many sectors, but each as the loads asked for
    gemm = {"flops": 2 * 4096.0**3, "bytes": 3 * 4096 * 4096 * 2.0, "shape": "4096x4096x4096"}
    ideal = {"global_ld_sectors": 16e9, "global_ld_requests": 1e9}
    f = one_case(**LATENCY, **gemm, **ideal, global_ld_bytes_requested=16e9 * 32)
    assert Cause.UNCOALESCED not in causes(f)
    f = one_case(**LATENCY, **gemm, **ideal, global_ld_bytes_requested=8e9 * 32)
    assert Cause.UNCOALESCED in causes(f) and f.evidence["sectors_over_ideal_x"] == 2.0
    # without the requested bytes, sectors per request cannot tell 128-bit loads from scattered
    # ones: a matmul's coalescing is not measured, never guessed
    f = one_case(**LATENCY, **gemm, global_ld_sectors=32e9, global_ld_requests=1e9)
    assert Cause.UNCOALESCED not in causes(f) and "uncoalesced" in f.not_measured


@pytest.mark.parametrize(("conflicts", "flagged"), [(33.0, True), (32.0, False)])
def test_bank_conflicts(conflicts: float, flagged: bool) -> None:
    f = one_case(**COMPUTE, shared_bank_conflicts=conflicts, shared_wavefronts=100.0)
    assert (Cause.BANK_CONFLICTS in causes(f)) is flagged
    assert (Action.PAD_SHARED in actions(f)) is flagged


# --- compute: the right pipe, the right roof, the right advice -----------------------------------


def test_tensor_bound_user_kernel_does_less_math() -> None:
    f = one_case(**COMPUTE, tensor_pipe_pct=95.0)
    assert f.unit == Unit.TENSOR and causes(f)[0] == Cause.TENSOR_BUSY
    assert actions(f) == [Action.LESS_MATH]


def test_compute_roof_per_pipe_and_dtype_at_ncus_clock() -> None:
    gemm = {"flops": 2 * 4096.0**3, "bytes": 3 * 4096 * 4096 * 2.0, "device_p50_ms": 0.25}
    f = one_case(dtype="bfloat16", **COMPUTE, **gemm, tensor_pipe_pct=90.0, ncu_sm_clock_mhz=1500.0)
    roof = SM_COUNT * 1500e6 * 4096 / 1e12  # dense bf16 on sm_90
    assert f.evidence["roof_pipe"] == "tensor_fp16"
    assert f.evidence["pipe_roof_tflops"] == pytest.approx(roof)
    achieved = gemm["flops"] / 0.25e-3 / 1e12
    assert f.evidence["pct_of_pipe_roof_pct"] == pytest.approx(achieved / roof * 100)
    assert f.evidence["pct_of_measured_matmul_pct"] == pytest.approx(achieved / 800 * 100)
    # fp32 off the Tensor Cores is judged against the FMA pipe
    f = one_case(dtype="float32", **COMPUTE, **gemm, tensor_pipe_pct=0.0, fma_pipe_pct=90.0,
                 ncu_sm_clock_mhz=1500.0)  # fmt: skip
    assert f.evidence["roof_pipe"] == "fp32_fma"
    assert "pct_of_measured_matmul_pct" not in f.evidence  # the measured matmul is bf16


def test_fp32_cublas_gemm_on_fma_is_told_tf32_never_tl_dot() -> None:
    kernels = pd.DataFrame([{"launch": 0, "kernel_name": "sm90_xmma_gemm_f32f32_f32f32_f32_nn_n",
                             "dtype": "float32", **COMPUTE, "tensor_pipe_pct": 0.0,
                             "fma_pipe_pct": 91.0}])  # fmt: skip
    (f,) = list(explain_launches(kernels, None))
    assert f.unit == Unit.FMA and causes(f)[0] == Cause.FP32_GEMM_ON_FMA
    assert actions(f)[0] == Action.USE_TF32 and Action.USE_TENSOR_CORES not in actions(f)
    advice = first_advice_text(f)
    assert "set_float32_matmul_precision" in advice and "tl.dot" not in advice


def test_a_user_matmul_off_the_tensor_cores_is_told_tl_dot() -> None:
    gemm = {"flops": 2 * 4096.0**3, "bytes": 3 * 4096 * 4096 * 2.0, "shape": "4096x4096x4096"}
    f = one_case(**COMPUTE, **gemm, tensor_pipe_pct=0.0, fma_pipe_pct=88.0)
    assert causes(f)[0] == Cause.MATMUL_OFF_TENSOR and actions(f)[0] == Action.USE_TENSOR_CORES
    # the same FLOPs per byte in an elementwise FMA chain (no matmul shape, no MMA): no GEMM step
    f = one_case(**COMPUTE, flops=2 * 4096.0**3, bytes=3 * 4096 * 4096 * 2.0,
                 tensor_pipe_pct=0.0, fma_pipe_pct=88.0)  # fmt: skip
    assert causes(f)[0] == Cause.PIPE_BUSY and actions(f)[0] == Action.CHEAPER_MATH
    assert not {Action.USE_TENSOR_CORES, Action.USE_TF32, Action.FEED_TENSOR} & set(actions(f))


def test_an_elementwise_kernel_is_never_told_to_use_tensor_cores() -> None:
    f = one_case(**COMPUTE, tensor_pipe_pct=0.0, xu_pipe_pct=85.0, fma_pipe_pct=20.0)
    assert f.unit == Unit.XU and causes(f)[0] == Cause.PIPE_BUSY
    assert actions(f) == [Action.CHEAPER_MATH]  # an elementwise chain: precision, fast math
    advice = first_advice_text(f)
    assert "tl.dot" not in finding_text(f) + advice and "Tensor" not in advice


def test_a_matmul_far_under_its_tensor_roof_is_under_fed() -> None:
    gemm = {"flops": 2 * 4096.0**3, "bytes": 3 * 4096 * 4096 * 2.0, "device_p50_ms": 1.0}
    f = one_case(dtype="bfloat16", **LATENCY, **gemm, tensor_pipe_pct=30.0, ncu_sm_clock_mhz=1900.0)
    assert Cause.TENSOR_UNDERFED in causes(f) and Action.FEED_TENSOR in actions(f)


def test_library_gemm_at_the_tensor_roof_gets_library_advice() -> None:
    kernels = pd.DataFrame([{"launch": 0, "kernel_name": "nvjet_sm90_tst_256x128_64x4_1x2_h_bz",
                             **COMPUTE, "tensor_pipe_pct": 95.0}])  # fmt: skip
    (f,) = list(explain_launches(kernels, None))
    assert actions(f) == [Action.LIBRARY_SHAPES]


# --- latency: the launch shape ------------------------------------------------------------------


def test_small_grid_names_the_idle_sms_and_a_short_one_asks_for_a_graph() -> None:
    f = one_case(**LATENCY, grid_size=16.0, waves_per_sm=0.12, ncu_duration_ms=0.0035)
    assert f.bottleneck == Bottleneck.LATENCY and f.unit == Unit.LAUNCH
    assert causes(f)[0] == Cause.SMALL_GRID and f.evidence["idle_sms"] == 116
    assert actions(f)[0] == Action.CUDA_GRAPH
    f = one_case(**LATENCY, grid_size=16.0, waves_per_sm=0.12, ncu_duration_ms=0.05)
    assert actions(f)[0] == Action.MORE_PROGRAMS


@pytest.mark.parametrize(
    ("grid", "first"), [(132.0, Cause.MEMORY_LATENCY), (131.0, Cause.SMALL_GRID)]
)
def test_a_grid_on_every_sm_waiting_on_memory_is_latency_first(grid: float, first: Cause) -> None:
    # the zoo's pointer chase: one one-warp program per SM, 99% long-scoreboard, memory idle;
    # every SM works, so the SMs lack loads in flight, not work: the grid is said second
    waits = {"stall_long_scoreboard_pct": 98.0, "stall_wait_pct": 1.0}
    f = one_case(**LATENCY, **waits, grid_size=grid, waves_per_sm=grid / 132 / 32)
    assert causes(f)[0] == first and {Cause.MEMORY_LATENCY, Cause.SMALL_GRID} <= set(causes(f))
    assert actions(f)[0] == (
        Action.HIDE_LATENCY if first == Cause.MEMORY_LATENCY else Action.MORE_PROGRAMS
    )


@pytest.mark.parametrize(
    ("l2", "lg", "expected"),
    [(87.6, 23.0, Bottleneck.MEMORY), (79.9, 23.0, Bottleneck.LATENCY),
     (87.6, 4.0, Bottleneck.LATENCY)],
)  # fmt: skip
def test_full_memory_queues_under_the_latency_line_are_memory_bound(l2, lg, expected) -> None:
    # the zoo's random gather: SOL memory 59.85%, L2 87.6%, 49% of the stalls on full queues
    sol = {"memory_throughput_pct": 59.85, "dram_throughput_pct": 59.85, "sm_throughput_pct": 0.9}
    waits = {"stall_long_scoreboard_pct": 36.0, "stall_lg_throttle_pct": lg,
             "stall_mio_throttle_pct": lg, "stall_drain_pct": 9.0}  # fmt: skip
    f = one_case(**sol, **waits, l2_throughput_pct=l2, waves_per_sm=7.8, grid_size=16384.0)
    assert f.bottleneck == expected
    if expected == Bottleneck.MEMORY:
        assert f.evidence["sol_bottleneck"] == "latency"
        assert f.evidence["memory_queue_stall_share_pct"] == pytest.approx(46 / 91 * 100)
        assert "SOL reads latency" in finding_text(
            f
        ) and "full memory queues, L2 at" in finding_text(f)


@pytest.mark.parametrize(
    ("tensor", "cause"), [(69.1, Cause.TENSOR_UNDERFED), (80.0, Cause.TENSOR_BUSY)]
)
def test_a_gemm_bound_on_the_tensor_cores_names_their_state(tensor: float, cause: Cause) -> None:
    # the zoo's int8 GEMM: compute-bound, IMMA 69% busy, barrier stalls dominant; the Tensor pipe
    # is the unit, so its state comes first and the stall says how, after
    gemm = {"flops": 2 * 4096.0**3, "bytes": 3 * 4096 * 4096 * 2.0, "shape": "4096x4096x4096"}
    sol = {"memory_throughput_pct": 51.0, "dram_throughput_pct": 20.0, "sm_throughput_pct": 66.0}
    f = one_case(**gemm, **sol, tensor_pipe_pct=tensor, stall_barrier_pct=62.0,
                 stall_wait_pct=8.0, waves_per_sm=1.0, grid_size=132.0)  # fmt: skip
    assert f.bottleneck == Bottleneck.COMPUTE and f.unit == Unit.TENSOR
    assert causes(f)[0] == cause
    if cause == Cause.TENSOR_UNDERFED:
        assert actions(f)[:2] == [Action.FEED_TENSOR, Action.DEEPER_PIPELINE]


@pytest.mark.parametrize(("waves", "tail"), [(1.1, True), (3.88, False), (1.9, False)])
def test_tail_from_the_actual_waves(waves: float, tail: bool) -> None:
    f = one_case(**LATENCY, waves_per_sm=waves, grid_size=1000.0)
    assert (Cause.TAIL in causes(f)) is tail


def test_occupancy_causes() -> None:
    f = one_case(**LATENCY, achieved_occupancy_pct=30.0, theoretical_occupancy_pct=100.0,
                 waves_per_sm=8.0)  # fmt: skip
    assert causes(f)[0] == Cause.LOW_OCCUPANCY and actions(f)[0] == Action.BALANCE_WORK
    f = one_case(**LATENCY, achieved_occupancy_pct=50.0, theoretical_occupancy_pct=100.0,
                 waves_per_sm=8.0)  # fmt: skip
    assert Cause.LOW_OCCUPANCY not in causes(f)  # exactly half is not low
    f = one_case(**LATENCY, achieved_occupancy_pct=18.0, theoretical_occupancy_pct=18.75,
                 registers_per_thread=168.0, waves_per_sm=8.0)  # fmt: skip
    assert causes(f)[0] == Cause.LOW_THEORETICAL_OCCUPANCY
    assert actions(f)[0] == Action.RAISE_OCCUPANCY and f.evidence["registers_per_thread"] == 168


def test_many_short_kernels_are_launch_overhead() -> None:
    f = one_case(**LATENCY, kernel_count=8.0, ncu_duration_ms=0.02)
    assert causes(f)[0] == Cause.LAUNCH_OVERHEAD and actions(f)[0] == Action.CUDA_GRAPH


def test_a_ruled_out_step_is_withheld_with_its_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "ruled_out.json").write_text(json.dumps(
        {"rmsnorm": [{"variant": "triton", "action": "raise_occupancy", "why": "tried in v2"}]}
    ))  # fmt: skip
    monkeypatch.setattr(explain_run_module, "_notebook_dir", lambda: tmp_path)
    f = one_case(**LATENCY, achieved_occupancy_pct=18.0, theoretical_occupancy_pct=18.75,
                 waves_per_sm=8.0)  # fmt: skip
    assert Cause.LOW_THEORETICAL_OCCUPANCY in causes(f)
    assert Action.RAISE_OCCUPANCY not in actions(f)
    assert f.ruled_out == [{"action": "raise_occupancy", "why": "tried in v2"}]


# --- per-launch drill-down ----------------------------------------------------------------------


def chain_kernels(case_name: str) -> pd.DataFrame:
    """An eager chain: two launches at 88-90% DRAM hold 74% of the time, two latency-bound the
    rest; their duration-weighted mean sits under every line."""
    rows = [
        (0, "vectorized_elementwise_kernel", 0.37, 88.0, 88.0, 8.0),
        (1, "reduce_kernel", 0.10, 40.0, 40.0, 45.0),
        (2, "vectorized_elementwise_kernel", 0.37, 90.0, 90.0, 9.0),
        (3, "elementwise_kernel", 0.16, 30.0, 30.0, 40.0),
    ]
    return pd.DataFrame(
        [{"case": case_name, "launch": i, "kernel_name": n, "ncu_duration_ms": ms,
          "dram_throughput_pct": d, "memory_throughput_pct": m, "sm_throughput_pct": s,
          "waves_per_sm": 60.0, "grid_size": 131072.0}
         for i, n, ms, d, m, s in rows]
    )  # fmt: skip


def test_a_chain_is_judged_by_where_its_time_goes_never_by_averages() -> None:
    row = case("eager", baseline=True, kernel_count=4.0, ncu_duration_ms=1.0,
               memory_throughput_pct=74.7, dram_throughput_pct=74.7, sm_throughput_pct=18.0,
               dram_bytes=4 * 134217728.0)  # fmt: skip
    run = run_of([row], kernels=chain_kernels(row["case"]))
    (f,) = [f for f in explain_run(run) if f.kind == FindingKind.CASE]
    assert len(f.launches) == 4
    assert sum(x.share_pct for x in f.launches) == pytest.approx(100.0)
    memory, latency = Bottleneck.MEMORY, Bottleneck.LATENCY
    assert [x.bottleneck for x in f.launches] == [memory, latency, memory, latency]
    assert f.bottleneck == Bottleneck.MEMORY  # 74% of the time
    (where,) = [r for r in f.reasons if r.cause == Cause.TIME_IN_LAUNCHES]
    top = where.detail["groups"][0]
    assert (top["bottleneck"], top["launches"]) == ("memory", 2)
    assert top["share_pct"] == pytest.approx(74.0)
    assert (top["dram_min_pct"], top["dram_max_pct"]) == (88.0, 90.0)
    assert "74.0% in 2 memory-bound launches at 88-90% DRAM" in finding_text(f)
    assert Cause.EXTRA_PASSES in causes(f) and actions(f)[0] == Action.FUSE
    assert {x.family for x in f.launches} == {"aten_elementwise", "aten_reduce"}
    d = finding_dict(f)
    assert [x["launch"] for x in d["launches"]] == [0, 1, 2, 3]
    assert d["launches"][0]["name"] == "vectorized_elementwise_kernel"


def test_launch_names_are_demangled_and_shortened() -> None:
    name = (
        "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>(int)"
    )
    assert lib.short_name(name) == "vectorized_elementwise_kernel"
    assert len(lib.short_name("x" * 200)) <= 48
    assert lib.family(name) == lib.Family.ATEN_ELEMENTWISE
    assert lib.family("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT") == lib.Family.CUBLAS
    assert lib.family("cutlass_80_tensorop_s1688gemm") == lib.Family.CUTLASS
    assert lib.family("triton_red_fused_add_mean_mul_pow_rsqrt_0") == lib.Family.INDUCTOR
    assert lib.family("_rmsnorm_kernel") == lib.Family.OTHER
    assert lib.family("vectorized_layer_norm_kernel") == lib.Family.ATEN_NORM


def test_a_name_the_profiler_left_mangled_is_named_by_its_function_as_ncu_names_it() -> None:
    """torch.profiler handed over cuDNN's CUTLASS wgrad convolution on the H200 mangled (1679
    characters its demangler could not read; tests/fixtures/mangled_kernel.txt); ncu demangled
    the same family to `void cutlass__5x_cudnn::Kernel<...>(T1::Params)`, function name `Kernel`
    (its report's function, demangled and mangled names, read there). Matching on the mangled
    name had left the top conv group of a conv net unprofiled."""
    wgrad = (Path(__file__).parent / "fixtures" / "mangled_kernel.txt").read_text().strip()
    assert wgrad.startswith("_ZN17cutlass__5x_cudnn6KernelI") and len(wgrad) == 1679
    assert lib.short_name(wgrad) == "Kernel"
    assert lib.family(wgrad) == lib.Family.CUTLASS  # cuDNN's own copy of CUTLASS: library code
    fprop = "_ZN17cutlass__5x_cudnn6KernelI73cutlass_tensorop_bf16_s16816fprop_optimized_bf16_128x128_32x5_nhwc_align8EEvNT_6ParamsE"  # noqa: E501  (ncu's mangled name, as printed)
    assert lib.short_name(fprop) == "Kernel"
    assert lib.short_name("_Z6kernelPf") == "kernel"  # a plain function
    assert lib.short_name("_ZNK3foo3barEv") == "bar"  # a const member
    assert lib.mangled_function("_Zx") is None and lib.short_name("_Zx") == "_Zx"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        # ATen's own kernels, as the H200 runs named them
        ("cunn_SoftMaxForwardSmem", lib.Family.ATEN_NORM),
        ("softmax_warp_forward", lib.Family.ATEN_NORM),
        ("reduce_kernel", lib.Family.ATEN_REDUCE),
        # user kernels whose names only resemble ATen's: the lab's, and the Triton tutorials'
        ("_softmax_rowsplit_kernel", lib.Family.OTHER),
        ("softmax_kernel", lib.Family.OTHER),
        ("_layer_norm_fwd_fused", lib.Family.OTHER),
        ("_splitk_reduce_kernel", lib.Family.OTHER),
    ],
)
def test_only_atens_own_names_are_library_code(name: str, expected: str) -> None:
    assert lib.family(name) == expected


def test_a_lab_kernels_shape_rules_are_not_set_aside_as_library_code() -> None:
    # a case's rules are judged with the case's own family: a lab kernel named like ATen's
    # layer norm is the user's Triton code, though a bare report (lab unknown) could only go
    # by the name
    from profkit.explain import ncu_rules as rules_mod

    launch = {"launch": 0, "kernel_name": "cunn_SoftMaxForward", **LATENCY}
    table = rule_rows(
        (0, "", "cunn_SoftMaxForward", "Occupancy", "TheoreticalOccupancy", "OPTIMIZATION",
         "limited by the number of required registers", 20.0, ""),
    )  # fmt: skip
    index = rules_mod.by_launch(table)
    (baseline,) = rules_mod.case_rules(index, [launch], lab=False)
    assert baseline.suppressed == "library_kernel"
    lab_launch = {**launch, "kernel_name": "layer_norm_fwd_kernel"}
    assert lib.family("layer_norm_fwd_kernel") == lib.Family.ATEN_NORM  # by the name alone
    (lab,) = rules_mod.case_rules(index, [lab_launch], lab=True)
    assert lab.suppressed is None
    (bare,) = rules_mod.case_rules(index, [lab_launch])
    assert bare.suppressed == "library_kernel"


# --- NVIDIA's rules, judged ---------------------------------------------------------------------


def rule_rows(*rows: tuple) -> pd.DataFrame:
    cols = ["launch", "case", "kernel_name", "section", "rule", "type", "message", "speedup_pct",
            "title"]  # fmt: skip
    return pd.DataFrame([dict(zip(cols, r, strict=True)) for r in rows])


def test_rules_are_kept_but_set_aside_where_a_unit_is_saturated() -> None:
    name = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"
    kernels = pd.DataFrame([
        {"launch": 0, "kernel_name": name, **COMPUTE, "tensor_pipe_pct": 95.0, "waves_per_sm": 1.0},
        {"launch": 1, "kernel_name": "_k", **MEMORY, "waves_per_sm": 3.88},
        {"launch": 2, "kernel_name": "_k", **LATENCY, "waves_per_sm": 1.1},
    ])  # fmt: skip
    rules = rule_rows(
        (0, "", name, "Occupancy", "TheoreticalOccupancy", "OPTIMIZATION", "regs", 81.25, ""),
        (0, "", name, "LaunchStats", "LaunchConfiguration", "OPTIMIZATION",
         "at least two blocks per multiprocessor", None, "Small Grid"),
        (1, "", "_k", "Occupancy", "AchievedOccupancy", "OPTIMIZATION", "occ", 12.0, ""),
        (2, "", "_k", "LaunchStats", "LaunchConfiguration", "OPTIMIZATION", "partial wave", 45.0,
         "Tail Effect"),
        (2, "", "_k", "SpeedOfLight", "SOLBottleneck", "OK", "fine", None, ""),
    )  # fmt: skip
    found = list(explain_launches(kernels, rules))
    gemm, stream, tail = (f.nvidia_rules for f in found)
    assert [r.suppressed for r in gemm] == ["tensor_saturated", "tensor_saturated"]
    assert gemm[0].message == "regs" and gemm[0].speedup_pct == 81.25  # kept, with NVIDIA's text
    assert [r.suppressed for r in stream] == ["dram_saturated"]
    assert [r.suppressed for r in tail] == [None]  # 1.1 waves: 45% idle, a real tail; OK dropped
    kernels.loc[2, "waves_per_sm"] = 3.88
    (_, _, tail) = (f.nvidia_rules for f in explain_launches(kernels, rules))
    assert tail[0].suppressed == "tail_small" and tail[0].note["tail_idle_pct"] == pytest.approx(
        3.0
    )


def test_persistent_kernel_and_library_shape_rules() -> None:
    name = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"
    kernels = pd.DataFrame([{"launch": 0, "kernel_name": name, **LATENCY, "waves_per_sm": 1.0}])
    rules = rule_rows(
        (0, "", name, "LaunchStats", "LaunchConfiguration", "OPTIMIZATION",
         "at least two blocks per multiprocessor", None, "Small Grid"),
        (0, "", name, "Occupancy", "TheoreticalOccupancy", "OPTIMIZATION", "regs", 81.0, ""),
    )  # fmt: skip
    (f,) = list(explain_launches(kernels, rules))
    assert [r.suppressed for r in f.nvidia_rules] == ["persistent_kernel", "library_kernel"]


# --- host cost and the eager loop (issue 7) -----------------------------------------------------


def test_host_bound_case_is_a_finding_of_its_own() -> None:
    row = case(shape="1x4096", device_p50_ms=0.0016, host_us=38.0, loop_us=38.5, **LATENCY)
    (h,) = [f for f in explain_run(run_of([row])) if f.kind == FindingKind.HOST]
    assert h.bottleneck == Bottleneck.HOST and causes(h) == [Cause.HOST_BOUND]
    assert h.evidence["host_us"] == 38.0 and h.evidence["device_us"] == pytest.approx(1.6)
    assert actions(h) == [Action.CUDA_GRAPH]
    assert "38 us against 1.6 us" in finding_text(h)
    assert "reduce-overhead" in first_advice_text(h) and "CUDA graph" in first_advice_text(h)


@pytest.mark.parametrize("columns", [{"host_us": 10.0}, {}])
def test_no_host_finding_when_the_gpu_is_slower_or_the_run_is_schema_1(columns: dict) -> None:
    row = case(device_p50_ms=0.05, **LATENCY, **columns)
    assert not [f for f in explain_run(run_of([row])) if f.kind == FindingKind.HOST]


def test_the_verdict_keeps_gpu_and_eager_loop_comparisons_apart() -> None:
    rows = [
        case("triton", shape="1x4096", device_p50_ms=0.0016, device_iqr_ms=0.00001,
             host_us=38.0, loop_us=38.0),
        case("native", baseline=True, shape="1x4096", device_p50_ms=0.0042,
             device_iqr_ms=0.00001, host_us=16.0, loop_us=16.0),
    ]  # fmt: skip
    (v,) = [f for f in explain_run(run_of(rows)) if f.kind == FindingKind.VERDICT]
    assert v.verdict == Verdict.WIN  # decided on device time
    (split,) = [r for r in v.reasons if r.detail.get("split")]
    assert v.evidence["split_gpu_ratio_x"] == pytest.approx(2.625)
    assert ("On the GPU triton is 2.6x faster than native at float16 1x4096; in an eager loop "
            "native wins, 16 us against 38 us per call.") in finding_text(v)  # fmt: skip


# --- verdicts on device-time statistics --------------------------------------------------------


def verdict_of(rows: list[dict], **kw: object) -> Finding:
    (v,) = [f for f in explain_run(run_of(rows, **kw)) if f.kind == FindingKind.VERDICT]
    return v


def test_win_active_track_not_a_win() -> None:
    fast = [case("triton", device_p50_ms=0.05), case("eager", baseline=True, device_p50_ms=0.2)]
    v = verdict_of(fast)
    assert v.verdict == Verdict.WIN and v.tally == {
        "eager": {"faster": 1, "slower": 0, "noise": 0, "unstable": 0}
    }
    (c,) = finding_dict(v)["comparisons"]
    assert set(c) >= {"dtype", "shape", "baseline", "ratio", "ci_low", "ci_high", "outcome",
                      "method"} and c["outcome"] == "faster"  # fmt: skip
    tie = [*fast, case("compile", baseline=True, device_p50_ms=0.0502)]
    assert verdict_of(tie).verdict == Verdict.ACTIVE_TRACK
    lose = [*fast, case("compile", baseline=True, device_p50_ms=0.03)]
    v = verdict_of(lose)
    assert v.verdict == Verdict.NOT_A_WIN and v.evidence["worst_loss_baseline"] == "compile"


def test_a_wide_interval_is_unstable_never_a_tie_or_a_loss() -> None:
    rows = [case("triton", device_p50_ms=0.05, device_iqr_ms=0.05, device_reps=5),
            case("eager", baseline=True, device_p50_ms=0.2)]  # fmt: skip
    v = verdict_of(rows)
    assert v.comparisons[0].outcome == "unstable" and v.verdict == Verdict.ACTIVE_TRACK


def test_loss_steps_come_from_the_losing_case() -> None:
    rows = [case("triton", device_p50_ms=0.06, **LATENCY, grid_size=16.0, waves_per_sm=0.12,
                 ncu_duration_ms=0.05),
            case("compile", baseline=True, device_p50_ms=0.03, **STREAM)]  # fmt: skip
    v = verdict_of(rows)
    assert v.next[0].action == Action.MORE_PROGRAMS
    detail = v.next[0].detail
    assert {k: detail[k] for k in ("where", "against")} == {
        "where": "float16 4096x8192",
        "against": "compile",
    }
    assert detail["gain_us"] > 1.0  # the gap to the roof it can close, stated


def test_incorrect_variant_is_never_a_win() -> None:
    rows = [case("triton", correct=False), case("eager", baseline=True, device_p50_ms=0.2)]
    v = verdict_of(rows)
    assert v.verdict == Verdict.NOT_A_WIN and causes(v) == [Cause.INCORRECT]
    assert actions(v) == [Action.FIX_CORRECTNESS]
    (f,) = [
        f for f in explain_run(run_of(rows)) if f.kind == FindingKind.CASE and f.variant == "triton"
    ]
    assert f.bottleneck is None and causes(f) == [Cause.INCORRECT]


def test_no_baseline_no_verdict() -> None:
    assert verdict_of([case("triton")]).verdict == Verdict.NO_BASELINE


def test_an_interpret_run_is_a_correctness_run() -> None:
    rows = [case("triton", device_p50_ms=NAN, shape=s) for s in ("1x4096", "16x8192")]
    for r in rows:
        r["device_p50_ms"] = NAN
    report = explain_run(run_of(rows, manifest={"mode": "interpret"}))
    (v,) = [f for f in report if f.kind == FindingKind.VERDICT]
    assert v.verdict == Verdict.CORRECTNESS_ONLY
    assert finding_text(v) == "Correctness run: 2/2 correct, no timing."
    assert not [f for f in report if f.kind == FindingKind.CASE]  # correct cases are not failures


def test_timing_only_claims_no_bottleneck() -> None:
    report = explain_run(run_of([case(pct_peak_bw=96.0)], status="no_permission",
                                reason="ERR_NVGPUCTRPERM"))  # fmt: skip
    (f,) = [f for f in report if f.kind == FindingKind.CASE]
    assert f.bottleneck is None and causes(f)[0] == Cause.NO_COUNTERS
    assert f.evidence["counters_reason"] == "ERR_NVGPUCTRPERM"


# --- history: earlier runs, and steps tried without effect -------------------------------------


def store_run(root: Path, name: str, created: str, rows: list[dict]) -> Path:
    path = root / name
    path.mkdir(parents=True)
    pd.DataFrame(rows).to_csv(path / "cases.csv", index=False)
    manifest = {"schema": 2, "run_id": name, "kernel": "rmsnorm", "complete": True,
                "created": created, "mode": "gpu", "ceilings": CEILINGS,
                "counters": {"status": "ok"},
                "fingerprint": {"sm_count": SM_COUNT, "compute_capability": "9.0"}}  # fmt: skip
    (path / "manifest.json").write_text(json.dumps(manifest))
    store.seal(path)  # constructed: no kernels.csv, and it vouches for that
    return path


def test_history_says_what_changed_and_rules_out_what_had_no_effect(tmp_path: Path) -> None:
    low = {**LATENCY, "theoretical_occupancy_pct": 18.75, "waves_per_sm": 8.0,
           "registers_per_thread": 168.0}  # fmt: skip
    v1 = [case("triton", device_p50_ms=0.100, achieved_occupancy_pct=45.6, **low)]
    v2 = [case("triton", device_p50_ms=0.1005, **{**low, "achieved_occupancy_pct": 89.7,
                                                  "theoretical_occupancy_pct": 18.75})]  # fmt: skip
    store_run(tmp_path, "rmsnorm-a", "2026-11-30T01:00:00", v1)
    newest = store.load(store_run(tmp_path, "rmsnorm-b", "2026-11-30T02:00:00", v2))
    report = explain_run(newest)
    (h,) = [f for f in report if f.kind == FindingKind.HISTORY]
    assert h.evidence["previous_run"] == "rmsnorm-a"
    assert h.evidence["occupancy_before_pct"] == 45.6 and h.evidence["occupancy_after_pct"] == 89.7
    assert h.ruled_out[0]["action"] == "raise_occupancy"
    (f,) = [f for f in report if f.kind == FindingKind.CASE]
    assert Cause.LOW_THEORETICAL_OCCUPANCY in causes(f)
    assert Action.RAISE_OCCUPANCY not in actions(f)  # never advised again
    # with the earlier run passed explicitly, the same
    again = explain_run(newest, [store.load(tmp_path / "rmsnorm-a")])
    assert [f.evidence for f in again if f.kind == FindingKind.HISTORY] == [h.evidence]
    # with no earlier run, the step is advised
    alone = explain_run(newest, [])
    (f,) = [f for f in alone if f.kind == FindingKind.CASE]
    assert Action.RAISE_OCCUPANCY in actions(f)


# --- output --------------------------------------------------------------------------------------


def mixed_run() -> store.Run:
    rows = [
        case("triton", device_p50_ms=0.05, **STREAM, dram_bytes=1.3e8, kernel_count=1.0),
        case("triton", shape="16x8192", device_p50_ms=0.006, **LATENCY, grid_size=16.0,
             waves_per_sm=0.12, ncu_duration_ms=0.003, host_us=36.0, loop_us=36.0),
        case("eager", baseline=True, device_p50_ms=0.4, kernel_count=4.0, ncu_duration_ms=1.0,
             memory_throughput_pct=74.7, dram_throughput_pct=74.7, sm_throughput_pct=18.0,
             dram_bytes=4 * 134217728.0),
        case("native", baseline=True, shape="16x8192", device_p50_ms=0.004, **LATENCY,
             host_us=16.0, loop_us=16.0),
    ]  # fmt: skip
    return run_of(rows, kernels=chain_kernels("rmsnorm.eager.float16.4096x8192"))


def test_json_is_versioned_and_keyed_by_identifiers() -> None:
    doc = json.loads(to_json(explain_run(mixed_run())))
    assert doc["schema_version"] == 2 and doc["findings"]
    for f in doc["findings"]:
        assert {"subject", "kind", "bottleneck", "evidence", "next", "verdict", "text"} <= set(f)
        assert all(re.fullmatch(r"[a-z0-9_]+", k) for k in f["evidence"])
        for step in f["next"]:
            assert Action(step["action"]) and step["text"]
    (chain,) = [f for f in doc["findings"] if f["subject"].startswith("rmsnorm eager")]
    assert len(chain["launches"]) == 4
    (v,) = [f for f in doc["findings"] if f["kind"] == "verdict"]
    assert {c["outcome"] for c in v["comparisons"]} <= {"faster", "slower", "noise", "unstable"}


def test_every_number_in_a_case_text_is_in_its_evidence() -> None:
    for f in explain_run(mixed_run()):
        if f.kind not in (FindingKind.CASE, FindingKind.HOST) or f.launches:
            continue
        quoted = {format_value(k, v) for k, v in f.evidence.items()}
        for number in re.findall(r"\d[\d.]*(?: ?(?:ms|us|MB|GB|KB|GB/s|%|x))?", finding_text(f)):
            assert any(number in q for q in quoted), (number, finding_text(f))


def render(report, width: int = 80, **kw) -> str:
    buf = io.StringIO()
    render_terminal(report, Console(file=buf, width=width, color_system=None), **kw)
    return buf.getvalue()


def test_golden_terminal_view_fits_80_columns() -> None:
    text = render(explain_run(mixed_run()))
    assert max(len(line) for line in text.splitlines()) <= 80
    assert text == (GOLDEN / "explain_mixed_80.txt").read_text()


def test_golden_markdown() -> None:
    assert to_markdown(explain_run(mixed_run())) == (GOLDEN / "explain_mixed.md").read_text()


def test_detail_views_filter_and_show_rules() -> None:
    report = explain_run(mixed_run())
    text = render(report, case="eager float16 4096x8192")
    assert "rmsnorm eager float16 4096x8192" in text and "triton" not in text
    assert "vectorized_elementwise_kernel [aten_elementwise]" in text
    text = render(report, variant="triton", width=60)
    assert max(len(line) for line in text.splitlines()) <= 60
    assert "rmsnorm triton float16 16x8192" in text and "eager float16" not in text


def test_cli_case_that_matches_nothing_is_a_one_line_error() -> None:
    from click.testing import CliRunner

    from profkit.cli import cli

    result = CliRunner().invoke(
        cli, ["explain", "--profiles", str(all_runs()), "--case", "triton float16 9x9"]
    )
    assert result.exit_code != 0
    assert result.output.strip().startswith("error: no finding matches case 'triton float16 9x9'")
    assert "Traceback" not in result.output


def test_cli_variant_that_matches_nothing_names_the_runs_variants() -> None:
    from click.testing import CliRunner

    from profkit.cli import cli

    args = ["explain", "softmax-20261201-002228-vm-a879b0", "--profiles", str(all_runs())]
    result = CliRunner().invoke(cli, [*args, "--variant", "nope"])
    assert result.exit_code == 1 and "Traceback" not in result.output
    (line,) = result.output.strip().splitlines()
    assert "its variants are triton, eager, torch, compile" in line


def test_a_library_gemm_short_of_busy_gets_shape_advice_never_tile_advice() -> None:
    kernels = pd.DataFrame([{"launch": 0, "kernel_name": "nvjet_sm90_tst_128x128_64x4_h_bz",
                             **COMPUTE, "tensor_pipe_pct": 60.0}])  # fmt: skip
    (f,) = list(explain_launches(kernels, None))
    assert causes(f)[0] == Cause.TENSOR_UNDERFED and actions(f) == [Action.LIBRARY_SHAPES]
    assert "library GEMM" in finding_text(f)


def test_a_gemm_beside_a_small_reduction_is_judged_as_the_gemm() -> None:
    gemm = {"flops": 2 * 4096.0**3, "bytes": 3 * 4096 * 4096 * 4.0, "device_p50_ms": 3.0}
    row = case("cublas", baseline=True, dtype="float32", kernel_count=2.0, **COMPUTE, **gemm)
    kernels = pd.DataFrame([
        {"case": row["case"], "launch": 0, "kernel_name": "void cutlass::Kernel2<cutlass_80_simt_"
         "sgemm_256x128_8x4_nn_align1>(Params)", "ncu_duration_ms": 2.9, **COMPUTE,
         "tensor_pipe_pct": 0.0, "fma_pipe_pct": 92.0},
        {"case": row["case"], "launch": 1, "kernel_name": "splitKreduce_kernel",
         "ncu_duration_ms": 0.1, **LATENCY},
    ])  # fmt: skip
    (f,) = [f for f in explain_run(run_of([row], kernels=kernels)) if f.kind == FindingKind.CASE]
    assert len(f.launches) == 2 and f.launches[0].family == "cutlass"
    assert f.bottleneck == Bottleneck.COMPUTE and f.unit == Unit.FMA
    assert Cause.FP32_GEMM_ON_FMA in causes(f) and actions(f)[0] == Action.USE_TF32
    assert Action.USE_TENSOR_CORES not in actions(f)


def test_the_detail_view_lists_roofs_hierarchy_pipes_and_stalls() -> None:
    row = case(**COMPUTE, tensor_pipe_pct=0.0, xu_pipe_pct=85.0, fma_pipe_pct=20.0,
               l2_hit_pct=50.0, dram_bytes_read=6.7e7, dram_bytes_write=4.1e7,
               stall_math_pipe_throttle_pct=30.0, stall_wait_pct=5.0)  # fmt: skip
    text = render(explain_run(run_of([row])), width=100, case="triton float16 4096x8192")
    assert "roofs: 33.6% of the large copy (4000 GB/s)" in text  # 134 MB in 0.1 ms
    assert "memory: DRAM 30.0%, L2 hit 50.0%, DRAM read 67.0 MB, write 41.0 MB" in text
    assert "pipes: Tensor (HMMA) 0.0%, FMA 20.0%, XU 85.0%" in text
    assert "stalls: math pipe throttle 30.0%, wait 5.0%" in text


# --- siblings: the other variants of the same case (constructed tables) --------------------------


def case_of(rows: list[dict], variant: str) -> Finding:
    report = explain_run(run_of(rows))
    return next(f for f in report if f.kind == FindingKind.CASE and f.variant == variant)


def at_same_size_roof(variant: str, share: float, **columns: object) -> dict:
    """A stream at `share` of a same-size copy (copy 4000 GB/s over the 134 MB model)."""
    p50 = 134217728.0 / (share / 100 * 4000e9) * 1e3
    return case(variant, device_p50_ms=p50, copy_gbps_same_size=4000.0, **columns)


LONG_SCOREBOARD = {"stall_long_scoreboard_pct": 60.0, "stall_barrier_pct": 12.0}


def test_a_sibling_moving_the_same_bytes_faster_refutes_the_copy_roof() -> None:
    mine = at_same_size_roof("triton", 95.5, dram_bytes=108.8e6, registers_per_thread=48.0,
                             **{**STREAM, "achieved_occupancy_pct": 56.8,
                                "theoretical_occupancy_pct": 95.0}, **LONG_SCOREBOARD)  # fmt: skip
    # compile: fewer DRAM bytes (L2 held more) but the same model bytes, 7% less time
    sibling = at_same_size_roof("compile", 102.4, baseline=True, dram_bytes=108.4e6,
                                **{**STREAM, "achieved_occupancy_pct": 90.7},
                                registers_per_thread=28.0)  # fmt: skip
    f = case_of([mine, sibling], "triton")
    assert Cause.AT_ROOF not in causes(f) and Cause.SIBLING_FASTER in causes(f)
    assert Action.FEWER_BYTES not in actions(f)
    assert actions(f)[:2] == [Action.MATCH_SIBLING, Action.HIDE_LATENCY]  # then the stall
    assert f.evidence["sibling_variant"] == "compile"
    assert f.evidence["sibling_time_share_pct"] == pytest.approx(95.5 / 102.4 * 100)
    step = f.next[0]
    assert step.detail["sibling"] == "compile" and step.detail["same"] == "bytes"
    assert {d["key"] for d in step.detail["differs"]} == {"achieved_occupancy_pct",
                                                         "registers_per_thread"}  # fmt: skip
    assert "only moving fewer bytes helps" not in finding_text(
        f
    ) and "will not help" not in first_advice_text(f)
    assert "compile moves the same bytes in 93.3% of its time" in finding_text(f)
    assert "the same-size copy is not the roof at this size" in finding_text(f)
    assert "achieved occupancy 90.7% against 56.8%" in first_advice_text(f)
    # the fastest variant itself is still at the roof
    g = case_of([mine, sibling], "compile")
    assert Cause.AT_ROOF in causes(g) and actions(g)[0] == Action.FEWER_BYTES


@pytest.mark.parametrize(
    ("sibling_share", "sibling_bytes", "refuted"),
    [(95.6, 134217728.0, False),  # a tie (within noise): the copy stands as the roof
     (102.4, 67108864.0, False)],  # faster, but moving half the bytes (DRAM and model)
)  # fmt: skip
def test_a_sibling_refutes_the_roof_only_moving_as_much_measurably_faster(
    sibling_share: float, sibling_bytes: float, refuted: bool
) -> None:
    mine = at_same_size_roof("triton", 95.5, dram_bytes=134e6, **STREAM)
    sibling = at_same_size_roof("other", 95.5, baseline=True, **STREAM,
                                dram_bytes=sibling_bytes * 0.99, bytes=sibling_bytes,
                                device_iqr_ms=0.01)  # fmt: skip
    sibling["device_p50_ms"] = mine["device_p50_ms"] * 95.5 / sibling_share
    f = case_of([mine, sibling], "triton")
    assert (Cause.SIBLING_FASTER in causes(f)) is refuted
    assert (Cause.AT_ROOF in causes(f)) is not refuted


MATMUL_M128 = {
    "flops": 2 * 128 * 8192 * 8192.0,
    "bytes": 138412032.0,
    "dtype": "bfloat16",
    "shape": "128x8192x8192",
    "ncu_sm_clock_mhz": 1780.0,
    "device_p50_ms": 0.046,
}
FEW_TILES = {"grid_size": 128.0, "waves_per_sm": 0.485, "tensor_pipe_pct": 45.0,
             "theoretical_occupancy_pct": 12.5, "achieved_occupancy_pct": 6.0}  # fmt: skip


@pytest.mark.parametrize(
    ("sol", "bottleneck"),
    [({"memory_throughput_pct": 70.6, "dram_throughput_pct": 60.2, "sm_throughput_pct": 45.0},
      Bottleneck.MEMORY),
     ({"memory_throughput_pct": 58.0, "dram_throughput_pct": 58.0, "sm_throughput_pct": 42.0},
      Bottleneck.LATENCY)],
)  # fmt: skip
def test_a_matmul_with_too_few_tiles_is_told_more_programs_never_larger_tiles(
    sol: dict, bottleneck: Bottleneck
) -> None:
    f = one_case(**MATMUL_M128, **FEW_TILES, **sol)
    assert f.bottleneck == bottleneck
    assert Action.FEED_TENSOR not in actions(f) and Cause.TENSOR_UNDERFED not in causes(f)
    assert causes(f).count(Cause.SMALL_GRID) == 1
    (small,) = [r for r in f.reasons if r.cause == Cause.SMALL_GRID]
    assert small.detail == {"matmul": True} and "dram_throughput_pct" in small.keys
    (step,) = [s for s in f.next if s.action == Action.MORE_PROGRAMS]
    assert step.detail["grid_size"] == 128 and step.detail["waves_per_sm"] == 0.485
    text = advice_text(step)
    assert "split-K" in text and "not larger tiles" in text
    assert "grid 128" in text and "waves per SM 0.485" in text
    assert f"DRAM {sol['dram_throughput_pct']:.1f}%" in text
    # the same matmul with tiles enough for every SM is under-fed: larger tiles then
    g = one_case(**MATMUL_M128, **sol, **{**FEW_TILES, "grid_size": 1024.0, "waves_per_sm": 3.9})
    assert Action.FEED_TENSOR in actions(g) and Action.MORE_PROGRAMS not in actions(g)


L1_BUSY = {"memory_throughput_pct": 98.8, "dram_throughput_pct": 19.3, "sm_throughput_pct": 81.0,
           "l1_throughput_pct": 98.8, "l2_throughput_pct": 40.0}  # fmt: skip


def test_a_busy_tensor_pipe_is_compute_bound_whatever_the_memory_line_says() -> None:
    assert classify(98.8, 81.0) == Bottleneck.MEMORY  # ncu's SOL rule alone
    kernels = pd.DataFrame([{"launch": 0, "kernel_name": "nvjet_sm90_tst_256x128_64x4_1x2_h_bz",
                             **L1_BUSY, "tensor_pipe_pct": th.TENSOR_BUSY_PCT}])  # fmt: skip
    (f,) = list(explain_launches(kernels, None))
    assert f.bottleneck == Bottleneck.COMPUTE and f.unit == Unit.TENSOR
    assert causes(f)[0] == Cause.TENSOR_BUSY and Cause.CACHE_BOUND not in causes(f)
    assert f.evidence["sol_bottleneck"] == "memory"
    assert actions(f) == [Action.LIBRARY_SHAPES]
    # just under the line, ncu's decision stands
    kernels["tensor_pipe_pct"] = th.TENSOR_BUSY_PCT - 0.1
    (f,) = list(explain_launches(kernels, None))
    assert f.bottleneck == Bottleneck.MEMORY and f.unit == Unit.L1


GEMM_4096 = {"flops": 2 * 4096.0**3, "bytes": 3 * 4096 * 4096 * 2.0, "dtype": "bfloat16",
             "shape": "4096x4096x4096"}  # fmt: skip


@pytest.mark.parametrize(("sibling_ms", "outcome"), [(0.81, "slower"), (1.0, "noise")])
def test_a_sibling_doing_the_same_flops_as_fast_replaces_do_less_math(
    sibling_ms: float, outcome: str
) -> None:
    mine = case("triton", device_p50_ms=1.0, **GEMM_4096, **COMPUTE, tensor_pipe_pct=95.0)
    other = case("cublas", baseline=True, device_p50_ms=sibling_ms, **GEMM_4096, **L1_BUSY,
                 tensor_pipe_pct=97.8)  # fmt: skip
    f = case_of([mine, other], "triton")
    assert causes(f)[0] == Cause.TENSOR_BUSY and f.unit == Unit.TENSOR
    assert Action.LESS_MATH not in actions(f) and actions(f)[0] == Action.MATCH_SIBLING
    assert f.next[0].detail["outcome"] == outcome and f.next[0].detail["same"] == "flops"
    assert "do less math" not in first_advice_text(f) and "cublas" in first_advice_text(f)
    said = "in 81.0% of its time" if outcome == "slower" else "in the same time"
    assert f"cublas does the same FLOPs {said}" in finding_text(f)
    # cuBLAS itself: compute-bound on the Tensor pipe, never memory-bound (L1/shared)
    g = case_of([mine, other], "cublas")
    assert g.bottleneck == Bottleneck.COMPUTE and g.unit == Unit.TENSOR
    # a sibling doing different FLOPs (another model) leaves "do less math"
    h = case_of([mine, {**other, "flops": GEMM_4096["flops"] / 2}], "triton")
    assert actions(h) == [Action.LESS_MATH]


def clock_fields(note: object, reasons: str = "") -> dict:
    """A case's clock note with the fields code reads beside it (as a capture writes them)."""
    return {"clock_note": note, "clock_throttled": isinstance(note, str) and note != "",
            "throttle_reasons": reasons}  # fmt: skip


def throttled_pair(lab_clocks: dict, base_clocks: dict) -> list[dict]:
    lab = case("triton", device_p50_ms=0.12, **STREAM, **lab_clocks, sm_clock_mhz=1410.0)
    base = case("compile", baseline=True, device_p50_ms=0.10, **STREAM, **base_clocks,
                sm_clock_mhz=1980.0)  # fmt: skip
    return [lab, base]


def test_a_loss_decided_on_throttled_cases_says_so() -> None:
    lab = clock_fields("sm clock 1410 of 1980 MHz; sw_power_cap", "sw_power_cap")
    report = explain_run(run_of(throttled_pair(lab, clock_fields(""))))
    (v,) = report.verdicts
    assert v.verdict == Verdict.NOT_A_WIN
    (r,) = [r for r in v.reasons if r.cause == Cause.THROTTLED]
    assert v.evidence["throttled_decided"] == 1 and v.evidence["decided_comparisons"] == 1
    assert v.evidence["throttle_reasons"] == "sw_power_cap"
    assert v.evidence["min_sm_clock_mhz"] == 1410.0
    assert v.evidence["worst_loss_throttled"] == ["triton"]
    assert "slower than compile at float16 4096x8192 (triton ran throttled)." in finding_text(v)
    assert "deciding 1 of its 1 wins and losses: those gaps may be the clock" in finding_text(v)
    assert "(sw_power_cap; SM down to 1410 MHz)" in finding_text(v)
    (c,) = v.comparisons
    assert c.throttled and c.to_dict()["clock_notes"]["baseline"] is None
    lab = next(f for f in report if f.kind == FindingKind.CASE and f.variant == "triton")
    assert Cause.THROTTLED in causes(lab) and lab.evidence["sm_clock_mhz"] == 1410.0
    said = "It ran throttled (sm clock 1410 of 1980 MHz; sw_power_cap, SM at 1410 MHz)"
    assert said in finding_text(lab)
    base = next(f for f in report if f.kind == FindingKind.CASE and f.variant == "compile")
    assert Cause.THROTTLED not in causes(base)


@pytest.mark.parametrize("note", [NAN, ""])
def test_runs_without_clock_notes_say_nothing_of_clocks(note: object) -> None:
    # NaN: an old run (no clock_note column at all reads the same); "": full clocks
    rows = throttled_pair(clock_fields(note), clock_fields(note))
    if note is NAN:
        clocks = ("clock_note", "clock_throttled", "throttle_reasons", "sm_clock_mhz")
        rows = [{k: v for k, v in r.items() if k not in clocks} for r in rows]
    report = explain_run(run_of(rows))
    for f in report:
        assert Cause.THROTTLED not in causes(f) and "throttled" not in finding_text(f)
    assert "clock_notes" not in report.verdicts[0].comparisons[0].to_dict()


def test_compute_roof_is_taken_at_the_clock_the_case_was_timed_at() -> None:
    # the achieved rate is the timed one, so its roof is at the timing's clock, not at the
    # counter pass's (they ran 1602 and 1822 MHz apart in the power-capped matmul run f75dcf)
    gemm = {"flops": 2 * 4096.0**3, "bytes": 3 * 4096 * 4096 * 2.0, "device_p50_ms": 0.25}
    f = one_case(dtype="bfloat16", **COMPUTE, **gemm, tensor_pipe_pct=90.0,
                 ncu_sm_clock_mhz=1500.0, sm_clock_mhz=1800.0)  # fmt: skip
    assert f.evidence["roof_clock_mhz"] == 1800.0
    assert f.evidence["pipe_roof_tflops"] == pytest.approx(SM_COUNT * 1800e6 * 4096 / 1e12)
    assert "roof at 1800 MHz" in finding_text(f)


def test_hfma2_mma_moves_are_not_tensor_core_math() -> None:
    # ptxas moves constants with HFMA2.MMA, which ncu's tensor pipe counts: a kernel with no MMA
    # (the lab's softmax reads 1.7%) whose FMA pipe does more is judged against the FMA roof
    gemm = {"flops": 5 * 1024 * 32768.0, "bytes": 2 * 1024 * 32768 * 2.0, "device_p50_ms": 0.04}
    f = one_case(dtype="float16", **MEMORY, **gemm, tensor_pipe_pct=1.7, fma_pipe_pct=21.8,
                 sm_clock_mhz=1980.0)  # fmt: skip
    assert f.evidence["roof_pipe"] == "fp32_fma"
    f = one_case(dtype="float16", **MEMORY, **gemm, tensor_pipe_pct=7.6, fma_pipe_pct=0.03,
                 sm_clock_mhz=1980.0)  # fmt: skip
    assert f.evidence["roof_pipe"] == "tensor_fp16"  # cuBLAS at M = 16: MMA math, little else
