"""The memory hierarchy: how close the stream is to the copy roof, and which level is busy
(coalescing, extra reads, a chain's extra passes, cache-bound, bank conflicts and data left in L2
are catalogue entries).

Reads and writes are judged apart: writes still in the 60 MB L2 when a kernel ends are never
counted by DRAM, so summing them dilutes a re-read (F.rms_norm reads its input twice).
"""

from __future__ import annotations

from operator import itemgetter

from profkit import thresholds as th
from profkit.explain.context import Context, Said
from profkit.explain.evidence import Evidence
from profkit.explain.model import Action, Advice, Cause, Reason, Unit
from profkit.explain.record import LaunchRecord
from profkit.explain.roofs import MEMORY_LEVELS, memory_roof, near_copy_line
from profkit.explain.siblings import match


def busy_level(rec: LaunchRecord, ev: Evidence) -> Unit | None:
    """The memory level a memory-bound kernel is bound on. ncu's memory throughput (SOL) is the
    judge: DRAM when it is DRAM's level; a cache when it is well above DRAM's, then L1 or L2 by
    their own throughput. (L2's lts__throughput runs above DRAM's on a plain stream, 87% against
    70% on the fused RMSNorm, so it cannot name the level by itself.)"""
    dram, mem = rec.dram_pct, rec.memory_pct
    if dram is None:
        return None
    if mem is None or mem - dram < th.CACHE_BOUND_GAP_PCT:
        return Unit.DRAM
    # the busier cache level by its own throughput, quoted
    levels = [(getattr(rec, name), u, name) for name, u in MEMORY_LEVELS if u != Unit.DRAM]
    value, unit, name = max(((v, u, n) for v, u, n in levels if v is not None),
                            default=(None, None, ""), key=itemgetter(0))  # fmt: skip
    ev.put(LaunchRecord.column(name), value)
    return unit


def dram_level(
    rec: LaunchRecord, ctx: Context, ev: Evidence, *, chain: bool = False
) -> Said | None:
    """At the roof (only fewer bytes help) or short of it. A case with timing is judged against
    the same-size copy (else the large one, saying so); a launch against ncu's DRAM peak. A case
    near the roof whose sibling moves as many bytes measurably faster is not at the roof."""
    dram = rec.dram_pct
    share = memory_roof(rec, ctx.device, ev)
    if dram is not None:
        ev.put("dram_throughput_pct", dram)
    keys = [
        k
        for k in ("pct_of_same_size_copy_pct", "pct_of_copy_pct", "dram_throughput_pct")
        if k in ev
    ]
    if share is not None:
        at_roof = round(share, 6) >= near_copy_line(rec)  # float noise: 94.9999999 is 95
    elif dram is not None:
        at_roof = round(dram, 6) >= th.NEAR_PEAK_DRAM_PCT
    else:
        return None
    if at_roof:
        # a sibling moving as many bytes measurably faster: the copy is not the roof here
        if ctx.siblings and ctx.siblings.faster("bytes") is not None:
            return Reason(Cause.SIBLING_FASTER, keys), [match("bytes")]
        step = Advice(Action.FUSE if chain else Action.FEWER_BYTES, keys)
        return Reason(Cause.AT_ROOF, keys), [step]
    return Reason(Cause.SHORT_OF_ROOF, keys), []


def at_size_roof(rec: LaunchRecord, ctx: Context, ev: Evidence) -> Said | None:
    """A case ncu calls latency-bound or balanced (a short stream) that runs as fast as a device
    copy of its bytes: at this size the copy's own fixed costs (launch, ramp, a partial wave)
    are the roof, so the launch-shape and latency steps its counters point to would not make it
    faster; a copy shows the same. Unless a sibling moves as many bytes measurably faster."""
    if not rec.copy_gbps_same_size or rec.matrix:
        return None
    share = memory_roof(rec, ctx.device, ev)
    if share is None or round(share, 6) < near_copy_line(rec):  # dram_level's line
        return None
    if ctx.siblings and ctx.siblings.faster("bytes") is not None:
        return None  # the copy is not the roof: dram_level's sibling finding says why
    keys = [k for k in ("pct_of_same_size_copy_pct", "pct_of_copy_pct") if k in ev]
    duration = rec.duration_ms
    if duration is not None and duration < th.SHORT_KERNEL_MS:
        # a kernel this short is as fast as a copy because both are a launch: the launch is the
        # cost, and graphs or fusing it with its neighbours remove it, not fewer bytes
        ev.put("ncu_duration_ms", duration)
        return Reason(Cause.AT_SIZE_ROOF, [*keys, "ncu_duration_ms"], {"launch": True}), [
            Advice(Action.CUDA_GRAPH, ["ncu_duration_ms"])
        ]
    return Reason(Cause.AT_SIZE_ROOF, keys), [Advice(Action.FEWER_BYTES, keys)]
