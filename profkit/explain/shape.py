"""Launch-shape causes: what the grid, the waves and occupancy show keeps the GPU under-used.

Launch overhead and a grid under one wave here (they read a chain's record and the siblings); a
tail wave (recomputed from the actual waves, not NVIDIA's 1/(waves+1) bound), low achieved or
theoretical occupancy and a short kernel are catalogue entries, said here in this order.
"""

from __future__ import annotations

from profkit import thresholds as th
from profkit.explain import catalogue
from profkit.explain.context import Context, Said
from profkit.explain.evidence import Evidence
from profkit.explain.model import Action, Advice, Cause, Reason
from profkit.explain.record import LaunchRecord


def launch_overhead(rec: LaunchRecord, ctx: Context, ev: Evidence) -> Said | None:
    count, duration = rec.kernel_count, rec.duration_ms
    if count is None or duration is None or count <= 1 or duration / count >= th.SHORT_KERNEL_MS:
        return None
    ev.put("kernel_count", count)
    ev.put("mean_kernel_ms", duration / count)
    return Reason(Cause.LAUNCH_OVERHEAD, ["kernel_count", "mean_kernel_ms"]), [
        Advice(Action.CUDA_GRAPH, ["kernel_count", "mean_kernel_ms"]),
        Advice(Action.FUSE, ["kernel_count"]),
    ]


def small_grid(rec: LaunchRecord, ctx: Context, ev: Evidence) -> Said | None:
    if not rec.grid_too_small:
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
    if rec.is_short:
        ev.put("ncu_duration_ms", rec.duration_ms)
        keys.append("ncu_duration_ms")
        return Reason(Cause.SMALL_GRID, keys, {"short": True}), [
            Advice(Action.CUDA_GRAPH, ["ncu_duration_ms"])
        ]
    if rec.matrix:
        # a sibling as fast or faster on as few programs refutes "too few": the grid is not the
        # limit (cuBLAS at M = 128 ran 128 blocks, deeper pipelined, at 79.5% DRAM)
        rival = ctx.siblings.faster("programs") if ctx.siblings else None
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
            Advice(Action.MORE_PROGRAMS, keys, detail)
        ]
    return Reason(Cause.SMALL_GRID, keys), [Advice(Action.MORE_PROGRAMS, keys)]


# Most specific first: the first cause found gives the first next step. The tail, occupancy and
# short-kernel causes are catalogue entries (profkit/explain/catalogue.py).
_ENTRIES = (Cause.TAIL, Cause.LOW_OCCUPANCY, Cause.LOW_THEORETICAL_OCCUPANCY, Cause.SHORT_KERNEL)


def shape_causes(
    rec: LaunchRecord, ctx: Context, ev: Evidence, outcomes: catalogue.Outcomes
) -> list[Said]:
    found = [launch_overhead(rec, ctx, ev), small_grid(rec, ctx, ev)]
    found += [catalogue.said(outcomes, c, rec.kind, ev) for c in _ENTRIES]
    return [said for said in found if said]
