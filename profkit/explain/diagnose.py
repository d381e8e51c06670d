"""One row (a case, or one launch) -> its bottleneck, limiting unit, causes and next steps.

In order: the record says what the kernel is and who owns it (record.kind, record.owner: one rule,
profkit/explain/kinds.py); the bottleneck is Nsight Compute's speed-of-light decision
(SOLBottleneck), except that a Tensor pipe at or above TENSOR_BUSY_PCT makes it compute-bound
whatever the memory line says; the catalogue's entries are evaluated once (found, absent, not
measured); the ranked specific causes come first (Entry.rank), then the bottleneck's story (the
pipes, the memory hierarchy, the launch shape and the stalls, each in its own module); a found
entry's refuted causes are dropped (Entry.refutes); each cause's remedy is its kind's. Then the
filters: the owner (a library kernel gets library advice, Inductor's code the compiler's),
steps an earlier version tried without effect, the declared conflicts (catalogue.CONFLICTS), and
steps whose gain is under the practical floor, each withheld with its reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from profkit import thresholds as th
from profkit.explain import catalogue, compute, memory, shape, stalls
from profkit.explain.bottleneck import bottleneck
from profkit.explain.context import Context, Said
from profkit.explain.evidence import Evidence
from profkit.explain.filters import STREAM_STEPS, keep
from profkit.explain.kinds import Owner
from profkit.explain.model import Action, Advice, Bottleneck, Cause, Reason, Unit
from profkit.explain.record import LaunchRecord
from profkit.explain.roofs import compute_roof, memory_roof
from profkit.explain.siblings import sibling_step


@dataclass
class Diagnosis:
    bottleneck: Bottleneck | None
    unit: Unit | None
    reasons: list[Reason] = field(default_factory=list)
    steps: list[Advice] = field(default_factory=list)
    evidence: Evidence = field(default_factory=Evidence)
    ruled_out: list[dict] = field(default_factory=list)
    # the catalogue's causes whose evidence this row does not hold (judged neither way)
    not_measured: list[str] = field(default_factory=list)


def diagnose(rec: LaunchRecord, ctx: Context) -> Diagnosis | None:
    """None when the row has no throughput counters."""
    ev = Evidence()
    kind = bottleneck(rec, ev)
    if kind is None:
        return None
    # the device's SM count and the case's read floor, which the catalogue's tests read
    rec = replace(rec, sm_count=ctx.device.sm_count or rec.sm_count, read_floor=ctx.read_floor)
    compute_roof(rec, ctx.dtype, ctx.device, ev)
    memory_roof(rec, ctx.device, ev)
    memory.hierarchy_facts(rec, ev)
    compute.pipe_facts(rec, ev)
    stalls.stall_facts(rec, ev)
    outcomes = catalogue.evaluate(rec)
    kernel = rec.kind
    ev.put("kernel_kind", str(kernel))
    # the catalogue's specific causes come before any story told from the SOL lines alone
    specific = catalogue.specific(outcomes, kernel, ev)  # by their declared rank
    # coalescing against the ideal sectors of the requested bytes where measured; without them,
    # only a stream's sectors against its model's bytes (sectors per request cannot tell a
    # vectorized load from a scattered one)
    if rec.ld_sectors_over_ideal is not None:
        coalescing = catalogue.said(outcomes, Cause.UNCOALESCED, kernel, ev)
    else:
        coalescing = memory.uncoalesced(rec, ctx, ev)
    found: list[Said | None] = []
    unit: Unit | None = None
    chain = (rec.kernel_count or 1) > 1
    if kind == Bottleneck.MEMORY:
        unit = memory.busy_level(rec, ev)
        # local-memory traffic refutes "reads its input more than once": spills are the re-reads;
        # so do sectors fetched beyond the ideal (a strided read pulls whole sectors from DRAM)
        reads = None if coalescing else catalogue.said(outcomes, Cause.EXTRA_READS, kernel, ev)
        found += [
            *specific,
            # a matmul bound on its caches is one whose tiles are too small to reuse data; on
            # DRAM, a matrix-vector product by its model streams its weights: not its pipes
            compute.pipe_detail(rec, ctx, ev, outcomes)
            if rec.matrix and (unit != Unit.DRAM or _dense(rec))
            else None,
            memory.chain_traffic(rec, ctx, ev) if chain else reads,
            coalescing,
            catalogue.said(outcomes, Cause.BANK_CONFLICTS, kernel, ev),
            catalogue.said(outcomes, Cause.CACHE_BOUND, kernel, ev),
            # where the DRAM level stands first: re-reads served by the caches are a fact beside it
            memory.dram_level(rec, ctx, ev, chain=chain),
            catalogue.said(outcomes, Cause.L2_REUSE, kernel, ev),
            catalogue.said(outcomes, Cause.DATA_IN_L2, kernel, ev),
        ]
        if any(s and s[0].cause == Cause.AT_ROOF for s in found):
            # at the copy roof only fewer bytes help: the other causes stay as facts
            found = [s if s and s[0].cause == Cause.AT_ROOF else _without(s, STREAM_STEPS)
                     for s in found]  # fmt: skip
        # short of the roof, or near it while a sibling streams the same bytes faster
        short = any(s and s[0].cause in _SHORT for s in found)
        specific = any(s and s[1] and s[0].cause != Cause.SIBLING_FASTER for s in found)
        if short and not specific:
            found += _why_short(rec, ctx, ev, outcomes)
        elif short:
            found = _with_faster_sibling(found, rec, ctx, ev)
    elif kind == Bottleneck.COMPUTE:
        unit = compute.pipe_unit(rec, ev)
        # GEMM steps only for kernels that issue MMAs or have a matmul's shape; any other busy
        # pipe gets its own kind's remedy (an FP64 elementwise chain is no matrix product)
        busy = compute.pipe_detail(rec, ctx, ev, outcomes) if rec.matrix else None
        if busy is None and unit == Unit.TENSOR and rec.matrix:
            busy = _tensor_short(rec, ev)
        found += [
            *specific,
            busy
            or catalogue.busy_pipe(outcomes, kernel, ev)
            or catalogue.said(outcomes, Cause.TENSOR_BUSY, kernel, ev),
            catalogue.said(outcomes, Cause.BANK_CONFLICTS, kernel, ev),
            catalogue.said(outcomes, Cause.ISSUE_BOUND, kernel, ev),
            stalls.dominant_stall(rec, ctx, ev),
        ]
        if not any(found):
            found.append(_open("ComputeWorkloadAnalysis"))
    elif kind == Bottleneck.LATENCY:
        causes = shape.shape_causes(rec, ctx, ev, outcomes)
        if any(not r.detail.get("refuted") for r, _ in causes):  # a refuted grid is no launch bound
            unit = Unit.LAUNCH
        latency = catalogue.said(outcomes, Cause.MEMORY_LATENCY, kernel, ev)
        capped = any(r.cause == Cause.LOW_THEORETICAL_OCCUPANCY for r, _ in causes)
        if latency and _every_sm_busy(rec, ctx) and not capped:
            # every SM holds a block: what the SMs lack is loads in flight, not work; the grid
            # under a wave is one way to that, said after it. Where the launch caps the warps
            # at a quarter or less, that cap is why too few loads are in flight: said first
            causes = [latency, *causes]
        if coalescing and _memory_idle(rec):
            # wasted sectors cost no time while no memory level is busy: a fact, not a step
            coalescing = _without(coalescing, frozenset({Action.COALESCE, Action.INDEX_LOCALITY}))
        found += [
            *specific,
            *causes,
            memory.chain_traffic(rec, ctx, ev)
            if chain
            else None
            if coalescing
            else catalogue.said(outcomes, Cause.EXTRA_READS, kernel, ev),
            coalescing,
            catalogue.said(outcomes, Cause.BANK_CONFLICTS, kernel, ev),
            compute.pipe_detail(rec, ctx, ev, outcomes) if rec.matrix else None,
            catalogue.said(outcomes, Cause.ISSUE_BOUND, kernel, ev),
            # long-scoreboard waits on an idle memory system: the latency, said once
            latency or stalls.dominant_stall(rec, ctx, ev),
        ]
        if not any(found):
            found.append(_nothing_seen(rec))
        found.append(catalogue.said(outcomes, Cause.DATA_IN_L2, kernel, ev))
    else:  # balanced
        found += [
            *specific,
            compute.pipe_detail(rec, ctx, ev, outcomes) if rec.matrix else None,
            coalescing,
            catalogue.said(outcomes, Cause.BANK_CONFLICTS, kernel, ev),
            catalogue.said(outcomes, Cause.ISSUE_BOUND, kernel, ev),
            stalls.dominant_stall(rec, ctx, ev),
        ]
        if not any(found):
            found.append(_open("ComputeWorkloadAnalysis"))
    if kind in (Bottleneck.LATENCY, Bottleneck.BALANCED):
        roof = memory.at_size_roof(rec, ctx, ev)
        if roof:  # a copy of the same bytes is no faster: its stalls and shape are a copy's too
            found = [roof, *(_without(s, STREAM_STEPS) for s in found)]
    refuted = catalogue.refuted(outcomes)
    said: list[Said] = []
    for s in found:  # one reason per cause (a small grid is both a shape and a matmul cause)
        if s and s[0].cause not in refuted and all(s[0].cause != x[0].cause for x in said):
            said.append(s)
    if unit is None and kind == Bottleneck.LATENCY and said:
        # no unit from the SOL lines: the leading cause's, where its entry names one (programs
        # too small to amortize their launch are bound on the launch of blocks)
        unit = catalogue.unit_of(outcomes, said[0][0].cause)
    diagnosis = Diagnosis(kind, unit, [r for r, _ in said], evidence=ev)
    diagnosis.not_measured = catalogue.not_measured(outcomes)
    steps = [step for _, steps in said for step in steps]
    diagnosis.steps, diagnosis.ruled_out = keep(steps, diagnosis.reasons, rec, ev, ctx)
    return diagnosis


def _tensor_short(rec: LaunchRecord, ev: Evidence) -> Said | None:
    """A user GEMM bound on the Tensor Cores short of their busy line: the unit is under-fed,
    said first; the dominant stall, said after, tells how (the zoo's int8 GEMM: IMMA 69% busy,
    67% of its roof, barrier stalls at 63%)."""
    if rec.owner == Owner.LIBRARY:
        return None  # a library GEMM's shape is its user's lever: its own cause says so
    # judged on the busy share against TENSOR_BUSY_PCT (its roof share can sit in cuBLAS's range)
    keys = [next(k for k in ("tensor_any_pct", "tensor_pipe_pct") if k in ev)]
    return Reason(Cause.TENSOR_UNDERFED, keys, {"busy": True}), [Advice(Action.FEED_TENSOR, keys)]


def _every_sm_busy(rec: LaunchRecord, ctx: Context) -> bool:
    grid = rec.grid_size
    return grid is not None and bool(ctx.device.sm_count) and grid >= ctx.device.sm_count


def _memory_idle(rec: LaunchRecord) -> bool:
    """Every memory level measured under ncu's latency line (the zoo's pointer chase: 8x the
    ideal sectors at 9% DRAM and 17% L2, each load's round trip its whole cost)."""
    levels = [v for v in (rec.memory_pct, rec.dram_pct, rec.l2_pct, rec.l1_pct) if v is not None]
    return bool(levels) and max(levels) < th.LATENCY_BOUND_PCT


def _dense(rec: LaunchRecord) -> bool:
    """FLOPs per byte of a matrix product, not of a matrix-vector one (M = 16 decode GEMMs)."""
    flops, min_bytes = rec.model_flops, rec.model_bytes
    return bool(flops and min_bytes) and flops / min_bytes >= th.MATMUL_INTENSITY_FLOP_PER_BYTE


_SHORT = (Cause.SHORT_OF_ROOF, Cause.SIBLING_FASTER)


def _without(said: Said | None, actions: frozenset) -> Said | None:
    """A cause kept as a fact, without the steps that would not help."""
    return (said[0], [s for s in said[1] if s.action not in actions]) if said else None


def _why_short(
    rec: LaunchRecord, ctx: Context, ev: Evidence, outcomes: list[catalogue.Outcome]
) -> list[Said | None]:
    """A stream short of the copy roof: the dominant stall where captured, else the launch shape,
    else more bytes in flight per thread."""
    stall = stalls.dominant_stall(rec, ctx, ev)
    found = ctx.siblings.faster_same_bytes() if ctx.siblings else None
    share = (
        _shared_stall_share(rec, found[0], stall[0].detail["stall"]) if stall and found else None
    )
    if share is not None:
        # the sibling that moves the same bytes faster waits as much on the same stall: that
        # stall does not explain the gap to it; what differs between the two does
        sibling = found[0]
        ev.put("sibling_stall_share_pct", share * 100)
        more, step = sibling_step(rec, found, ev, "bytes")
        detail = {**stall[0].detail, "shared_with": str(sibling.get("variant"))}
        return [(Reason(Cause.STALL, [*stall[0].keys, "sibling_stall_share_pct", *more], detail),
                 [step])]  # fmt: skip
    if stall:
        return [stall]
    causes = shape.shape_causes(rec, ctx, ev, outcomes)
    causes = [c for c in causes if c[0].cause != Cause.LAUNCH_OVERHEAD]
    if causes:
        return causes
    occupancy = rec.theoretical_occupancy_pct
    keys = []
    if occupancy is not None:
        ev.put("theoretical_occupancy_pct", occupancy)
        achieved = rec.achieved_occupancy_pct
        if achieved is not None:
            ev.put("achieved_occupancy_pct", achieved)
        keys = [k for k in ("theoretical_occupancy_pct", "achieved_occupancy_pct") if k in ev]
    steps = [Advice(Action.BYTES_IN_FLIGHT, keys)]
    if not stalls.has_stalls(rec):
        steps.append(Advice(Action.PROFILE_STALLS, []))
    return [(Reason(Cause.NO_CAUSE_SEEN, keys, {"short_of_roof": True}), steps)]


def _with_faster_sibling(
    found: list[Said | None], rec: LaunchRecord, ctx: Context, ev: Evidence
) -> list[Said | None]:
    """Short of the roof with a cause named, while a sibling moves the same bytes measurably
    faster: what differs between the two is a step beside that cause's (the first add_rmsnorm,
    told only to keep its re-read on chip, while Liger asked for 25% fewer load bytes)."""
    sibling = ctx.siblings.faster_same_bytes() if ctx.siblings else None
    if sibling is None:
        return found
    out = []
    for s in found:
        if s and s[0].cause == Cause.SHORT_OF_ROOF and not s[1]:
            more, step = sibling_step(rec, sibling, ev, "bytes")
            s = (Reason(s[0].cause, [*s[0].keys, *more], s[0].detail), [step])
        out.append(s)
    return out


def _shared_stall_share(rec: LaunchRecord, sibling: Mapping, reason: str) -> float | None:
    """The sibling's share of stalls on `reason` where it is at least this case's less a few
    points (the stall is shared), else None."""
    mine = stalls.stall_share(rec, reason)
    theirs = stalls.stall_share(LaunchRecord.of(sibling), reason)
    if mine is None or theirs is None:
        return None
    return theirs if theirs * 100 >= mine * 100 - th.STALL_SHARED_POINTS else None


def _nothing_seen(rec: LaunchRecord) -> Said:
    step = (
        Advice(Action.PROFILE_STALLS)
        if not stalls.has_stalls(rec)
        else _open("WarpStateStats")[1][0]
    )
    return Reason(Cause.NO_CAUSE_SEEN), [step]


def _open(section: str) -> Said:
    return Reason(Cause.NO_CAUSE_SEEN, [], {"section": section}), [
        Advice(Action.OPEN_NCU, [], {"section": section})
    ]
