"""Launch-shape causes: what the grid, the waves and occupancy show keeps the GPU under-used.

Launch overhead, a grid under one wave, a tail wave (recomputed from the actual waves, not
NVIDIA's 1/(waves+1) bound), low achieved or theoretical occupancy and a short kernel.
"""

from __future__ import annotations

import math

from profkit import thresholds as th
from profkit.explain.context import Context, Said
from profkit.explain.evidence import Evidence
from profkit.explain.model import Action, Cause, NextStep, Reason
from profkit.explain.record import LaunchRecord


def grid_too_small(rec: LaunchRecord, ctx: Context) -> bool:
    """Under one wave at a cost: SMs without a block, or a quarter of one wave's slots empty."""
    waves, grid = rec.waves_per_sm, rec.grid_size
    if waves is None or waves >= th.SMALL_GRID_WAVES:
        return False
    if grid is not None and ctx.device.sm_count and grid < ctx.device.sm_count:
        return True
    return 1 - waves >= th.TAIL_IDLE_SHARE


def tail_idle(waves: float | None) -> float | None:
    """The share of block slots the partial last wave leaves idle (None under one wave)."""
    if waves is None or waves < th.SMALL_GRID_WAVES:
        return None
    slots = math.ceil(round(waves, 6))  # 2.0000001 waves is two whole waves, not three
    return (slots - waves) / slots


def _short(rec: LaunchRecord) -> bool:
    count, duration = rec.kernel_count, rec.duration_ms
    return duration is not None and (count or 1) <= 1 and duration < th.SHORT_KERNEL_MS


def launch_overhead(rec: LaunchRecord, ctx: Context, ev: Evidence) -> Said | None:
    count, duration = rec.kernel_count, rec.duration_ms
    if count is None or duration is None or count <= 1 or duration / count >= th.SHORT_KERNEL_MS:
        return None
    ev.put("kernel_count", count)
    ev.put("mean_kernel_ms", duration / count)
    return Reason(Cause.LAUNCH_OVERHEAD, ["kernel_count", "mean_kernel_ms"]), [
        NextStep(Action.CUDA_GRAPH, ["kernel_count", "mean_kernel_ms"]),
        NextStep(Action.FUSE, ["kernel_count"]),
    ]


def small_grid(rec: LaunchRecord, ctx: Context, ev: Evidence) -> Said | None:
    if not grid_too_small(rec, ctx):
        return None
    keys = ["waves_per_sm", "wave_fill_pct"]
    ev.put("waves_per_sm", rec.waves_per_sm)
    ev.put("wave_fill_pct", rec.waves_per_sm * 100)
    grid = rec.grid_size
    if grid is not None:
        ev.put("grid_size", grid)
        keys.append("grid_size")
        if ctx.device.sm_count and grid < ctx.device.sm_count:
            ev.put("sm_count", ctx.device.sm_count)
            ev.put("idle_sms", ctx.device.sm_count - int(grid))
            keys += ["sm_count", "idle_sms"]
    if _short(rec):
        ev.put("ncu_duration_ms", rec.duration_ms)
        keys.append("ncu_duration_ms")
        return Reason(Cause.SMALL_GRID, keys, {"short": True}), [
            NextStep(Action.CUDA_GRAPH, ["ncu_duration_ms"])
        ]
    if rec.matrix:
        # a sibling as fast or faster on as few programs refutes "too few": the grid is not the
        # limit (cuBLAS at M = 128 ran 128 blocks, deeper pipelined, at 79.5% DRAM)
        rival = ctx.siblings.faster_on_as_few_programs() if ctx.siblings else None
        if rival is not None:
            other, c = rival
            ev.put("sibling_variant", str(other.get("variant")))
            ev.put("sibling_grid_size", LaunchRecord.of(other).grid_size)
            ev.put("sibling_time_share_pct", 100 / c.ratio)
            keys += ["sibling_variant", "sibling_grid_size", "sibling_time_share_pct"]
            return Reason(Cause.SMALL_GRID, keys, {"matmul": True, "refuted": True}), []
        # a matmul with too few tiles: more, smaller tiles (never larger ones), split-K or stream-K
        dram = rec.dram_pct
        if dram is not None:
            ev.put("dram_throughput_pct", dram)
            keys.append("dram_throughput_pct")
        detail = {"matmul": True, **{k: ev[k] for k in keys if k != "wave_fill_pct"}}
        return Reason(Cause.SMALL_GRID, keys, {"matmul": True}), [
            NextStep(Action.MORE_PROGRAMS, keys, detail)
        ]
    return Reason(Cause.SMALL_GRID, keys), [NextStep(Action.MORE_PROGRAMS, keys)]


def tail_effect(rec: LaunchRecord, ctx: Context, ev: Evidence) -> Said | None:
    waves = rec.waves_per_sm
    idle = tail_idle(waves)
    if idle is None or idle < th.TAIL_IDLE_SHARE:
        return None
    ev.put("waves_per_sm", waves)
    ev.put("tail_idle_pct", round(idle * 100, 2))
    return Reason(Cause.TAIL, ["waves_per_sm", "tail_idle_pct"]), [
        NextStep(Action.WHOLE_WAVES, ["waves_per_sm", "tail_idle_pct"])
    ]


def low_occupancy(rec: LaunchRecord, ctx: Context, ev: Evidence) -> Said | None:
    achieved, theoretical = rec.achieved_occupancy_pct, rec.theoretical_occupancy_pct
    # a grid under one wave caps achieved occupancy itself: the small-grid cause says so
    if achieved is None or theoretical is None or grid_too_small(rec, ctx):
        return None
    keys = ["achieved_occupancy_pct", "theoretical_occupancy_pct"]
    if achieved < th.LOW_OCCUPANCY_RATIO * theoretical:
        ev.put("achieved_occupancy_pct", achieved)
        ev.put("theoretical_occupancy_pct", theoretical)
        return Reason(Cause.LOW_OCCUPANCY, keys), [NextStep(Action.BALANCE_WORK, keys)]
    if theoretical < th.LOW_THEORETICAL_OCCUPANCY_PCT:
        ev.put("achieved_occupancy_pct", achieved)
        ev.put("theoretical_occupancy_pct", theoretical)
        regs = rec.registers_per_thread
        if regs is not None:
            ev.put("registers_per_thread", regs)
            keys.append("registers_per_thread")
        if rec.matrix:
            # one large-tile CTA per SM is how tl.dot and cuBLAS kernels keep operands in
            # registers and shared memory: a fact, not the step (their stalls say which is)
            return Reason(Cause.LOW_THEORETICAL_OCCUPANCY, keys), []
        return Reason(Cause.LOW_THEORETICAL_OCCUPANCY, keys), [
            NextStep(Action.RAISE_OCCUPANCY, keys)
        ]
    return None


def short_kernel(rec: LaunchRecord, ctx: Context, ev: Evidence) -> Said | None:
    if grid_too_small(rec, ctx) or not _short(rec):  # the small-grid cause already weighs it
        return None
    ev.put("ncu_duration_ms", rec.duration_ms)
    return Reason(Cause.SHORT_KERNEL, ["ncu_duration_ms"]), [
        NextStep(Action.CUDA_GRAPH, ["ncu_duration_ms"])
    ]


# Most specific first: the first cause found gives the first next step.
CAUSES = (launch_overhead, small_grid, tail_effect, low_occupancy, short_kernel)


def shape_causes(rec: LaunchRecord, ctx: Context, ev: Evidence) -> list[Said]:
    return [said for said in (check(rec, ctx, ev) for check in CAUSES) if said]
