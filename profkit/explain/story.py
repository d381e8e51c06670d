"""The causes said for one launch, in their declared order: the catalogue's ranked entries first
(Entry.rank), then its bottleneck's story (STORIES: the pipes, the memory hierarchy, the launch
shape's entries (_SHAPE) and the stalls), each cause with its remedy; then one reason per cause,
those a found entry refutes dropped (Entry.refutes). A step that points at a faster sibling is
chosen here as siblings.match(...) and quoted by siblings.quote, the one place a sibling's figures
are read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from profkit import thresholds as th
from profkit.explain import catalogue, compute, memory, stalls
from profkit.explain.context import Context, Said
from profkit.explain.evidence import Evidence
from profkit.explain.filters import STREAM_STEPS
from profkit.explain.kinds import KernelKind
from profkit.explain.model import Action, Advice, Bottleneck, Cause, Reason, Unit
from profkit.explain.record import LaunchRecord
from profkit.explain.siblings import match


@dataclass
class Scene:
    """What every bottleneck's story reads: the record, its context and evidence, the catalogue's
    outcomes, the ranked entries found (None in the place of one not found), coalescing, and
    whether the record is a chain's."""

    rec: LaunchRecord
    ctx: Context
    ev: Evidence
    outcomes: catalogue.Outcomes
    ranked: list[Said | None]
    coalescing: Said | None
    chain: bool  # a case of several launches

    def said(self, cause: Cause) -> Said | None:
        return catalogue.said(self.outcomes, cause, self.rec.kind, self.ev)

    def pipes(self) -> Said | None:
        """A matrix product's pipes: the Tensor entry's finding (busy, under-fed, unused, or its
        grid), else the busiest other pipe at its peak, with a GEMM's remedy."""
        tensor = self.outcomes.by_entry.get(Cause.TENSOR_BUSY)
        return (self.said(tensor.cause or tensor.entry.cause) if tensor else None) or (
            catalogue.said(self.outcomes, Cause.PIPE_BUSY, KernelKind.GEMM, self.ev)
        )


def tell(
    kind: Bottleneck, rec: LaunchRecord, ctx: Context, ev: Evidence, outcomes: catalogue.Outcomes
) -> tuple[Unit | None, list[Said]]:
    """The unit the launch is bound on and its causes, each with its steps, in order."""
    ranked = [catalogue.said(outcomes, e.cause, rec.kind, ev) for e in catalogue.RANKED]
    coalescing = catalogue.said(outcomes, Cause.UNCOALESCED, rec.kind, ev)
    chain = (rec.kernel_count or 1) > 1
    stall = outcomes.found.get(Cause.STALL)
    if stall is not None and Cause.STALL in outcomes.refuted:
        # a stall refuted (programs too small, atomics' ordering): its figures stay as facts
        for key, value in stall.evidence.items():
            ev.put(key, value)
    unit, found = STORIES[kind](Scene(rec, ctx, ev, outcomes, ranked, coalescing, chain))
    if kind in (Bottleneck.LATENCY, Bottleneck.BALANCED):
        roof = catalogue.said(outcomes, Cause.AT_SIZE_ROOF, rec.kind, ev)
        if roof:  # a copy of the same bytes is no faster: its stalls and shape are a copy's too
            found = [roof, *(_without(s, STREAM_STEPS) for s in found)]
    said: list[Said] = []
    for s in found:  # one reason per cause (a small grid is both a shape and a matmul cause)
        if s and s[0].cause not in outcomes.refuted and all(s[0].cause != x[0].cause for x in said):
            said.append(s)
    if unit is None and kind == Bottleneck.LATENCY and said:
        # no unit from the SOL lines: the leading cause's, where its entry names one (programs
        # too small to amortize their launch are bound on the launch of blocks)
        unit = catalogue.unit_of(outcomes, said[0][0].cause)
    return unit, said


def _memory(sc: Scene) -> tuple[Unit | None, list[Said | None]]:
    """Bound on a memory level: the traffic, and where the DRAM level stands to its roof."""
    rec, ev = sc.rec, sc.ev
    unit = memory.busy_level(rec, ev)
    # local-memory traffic refutes "reads its input more than once": spills are the re-reads;
    # so do sectors fetched beyond the ideal (a strided read pulls whole sectors from DRAM)
    reads = None if sc.coalescing else sc.said(Cause.EXTRA_READS)
    # FLOPs per byte of a matrix product, not of a matrix-vector one (M = 16 decode GEMMs)
    flops, model = rec.model_flops, rec.model_bytes
    dense = bool(flops and model) and flops / model >= th.MATMUL_INTENSITY_FLOP_PER_BYTE
    found = [
        *sc.ranked,
        # a matmul bound on its caches is one whose tiles are too small to reuse data; on
        # DRAM, a matrix-vector product by its model streams its weights: not its pipes
        sc.pipes() if rec.matrix and (unit != Unit.DRAM or dense) else None,
        sc.said(Cause.EXTRA_PASSES) if sc.chain else reads,
        sc.coalescing,
        sc.said(Cause.BANK_CONFLICTS),
        sc.said(Cause.CACHE_BOUND),
        # where the DRAM level stands first: re-reads served by the caches are a fact beside it
        sc.said(Cause.AT_ROOF) or sc.said(Cause.SIBLING_FASTER) or sc.said(Cause.SHORT_OF_ROOF),
        sc.said(Cause.L2_REUSE),
        sc.said(Cause.DATA_IN_L2),
    ]
    if any(s and s[0].cause == Cause.AT_ROOF for s in found):
        # at the copy roof only fewer bytes help: the other causes stay as facts
        found = [s if s and s[0].cause == Cause.AT_ROOF else _without(s, STREAM_STEPS)
                 for s in found]  # fmt: skip
    # short of the roof, or near it while a sibling streams the same bytes faster
    short = any(s and s[0].cause in _SHORT for s in found)
    named = any(s and s[1] and s[0].cause != Cause.SIBLING_FASTER for s in found)
    if short and not named:
        found += _why_short(sc)
    elif short and sc.ctx.siblings and sc.ctx.siblings.faster("bytes") is not None:
        # a cause named, while a sibling moves the same bytes measurably faster: what differs
        # between the two is a step beside that cause's (the first add_rmsnorm, told only to
        # keep its re-read on chip, while Liger asked for 25% fewer load bytes)
        found = [(s[0], [match("bytes")]) if s and s[0].cause == Cause.SHORT_OF_ROOF and not s[1]
                 else s for s in found]  # fmt: skip
    return unit, found


def _compute(sc: Scene) -> tuple[Unit | None, list[Said | None]]:
    """Bound on a pipe: which, and why; then issue and the dominant stall."""
    rec, ev = sc.rec, sc.ev
    unit = compute.pipe_unit(rec, ev)
    # GEMM steps only for kernels that issue MMAs or have a matmul's shape; any other busy
    # pipe gets its own kind's remedy (an FP64 elementwise chain is no matrix product)
    busy = sc.pipes() if rec.matrix else None
    found = [
        *sc.ranked,
        busy or sc.said(Cause.PIPE_BUSY) or sc.said(Cause.TENSOR_BUSY),
        sc.said(Cause.BANK_CONFLICTS),
        sc.said(Cause.ISSUE_BOUND),
        sc.said(Cause.STALL),
    ]
    if not any(found):
        found.append(_open("ComputeWorkloadAnalysis"))
    return unit, found


def _latency(sc: Scene) -> tuple[Unit | None, list[Said | None]]:
    """Under both SOL lines: the launch shape first, then the traffic, the pipes, the stalls."""
    rec = sc.rec
    causes = [said for cause in _SHAPE if (said := sc.said(cause))]
    # a refuted grid is no launch bound
    unit = Unit.LAUNCH if any(not r.detail.get("refuted") for r, _ in causes) else None
    latency = sc.said(Cause.MEMORY_LATENCY)
    capped = any(r.cause == Cause.LOW_THEORETICAL_OCCUPANCY for r, _ in causes)
    if latency and _every_sm_busy(rec, sc.ctx) and not capped:
        # every SM holds a block: what the SMs lack is loads in flight, not work; the grid
        # under a wave is one way to that, said after it. Where the launch caps the warps
        # at a quarter or less, that cap is why too few loads are in flight: said first
        causes = [latency, *causes]
    coalescing = sc.coalescing
    if coalescing and _memory_idle(rec):
        # wasted sectors cost no time while no memory level is busy: a fact, not a step
        coalescing = _without(coalescing, frozenset({Action.COALESCE, Action.INDEX_LOCALITY}))
    found = [
        *sc.ranked,
        *causes,
        sc.said(Cause.EXTRA_PASSES)
        if sc.chain
        else None
        if coalescing
        else sc.said(Cause.EXTRA_READS),
        coalescing,
        sc.said(Cause.BANK_CONFLICTS),
        sc.pipes() if rec.matrix else None,
        sc.said(Cause.ISSUE_BOUND),
        # long-scoreboard waits on an idle memory system: the latency, said once
        latency or sc.said(Cause.STALL),
    ]
    if not any(found):
        found.append(_nothing_seen(rec))
    found.append(sc.said(Cause.DATA_IN_L2))
    return unit, found


def _balanced(sc: Scene) -> tuple[Unit | None, list[Said | None]]:
    """Neither SOL line far above the other: the pipes, the traffic, the dominant stall."""
    found = [
        *sc.ranked,
        sc.pipes() if sc.rec.matrix else None,
        sc.coalescing,
        sc.said(Cause.BANK_CONFLICTS),
        sc.said(Cause.ISSUE_BOUND),
        sc.said(Cause.STALL),
    ]
    if not any(found):
        found.append(_open("ComputeWorkloadAnalysis"))
    return None, found


STORIES: dict[Bottleneck, Callable[[Scene], tuple[Unit | None, list[Said | None]]]] = {
    Bottleneck.MEMORY: _memory,
    Bottleneck.COMPUTE: _compute,
    Bottleneck.LATENCY: _latency,
    Bottleneck.BALANCED: _balanced,
}


def _every_sm_busy(rec: LaunchRecord, ctx: Context) -> bool:
    grid = rec.grid_size
    return grid is not None and bool(ctx.device.sm_count) and grid >= ctx.device.sm_count


def _memory_idle(rec: LaunchRecord) -> bool:
    """Every memory level measured under ncu's latency line (the zoo's pointer chase: 8x the
    ideal sectors at 9% DRAM and 17% L2, each load's round trip its whole cost)."""
    levels = [v for v in (rec.memory_pct, rec.dram_pct, rec.l2_pct, rec.l1_pct) if v is not None]
    return bool(levels) and max(levels) < th.LATENCY_BOUND_PCT


_SHORT = (Cause.SHORT_OF_ROOF, Cause.SIBLING_FASTER)
# the launch shape's causes, most specific first: the first found gives the first next step
_SHAPE = (Cause.LAUNCH_OVERHEAD, Cause.SMALL_GRID, Cause.TAIL, Cause.LOW_OCCUPANCY,
          Cause.LOW_THEORETICAL_OCCUPANCY, Cause.SHORT_KERNEL)  # fmt: skip


def _without(said: Said | None, actions: frozenset) -> Said | None:
    """A cause kept as a fact, without the steps that would not help."""
    return (said[0], [s for s in said[1] if s.action not in actions]) if said else None


def _why_short(sc: Scene) -> list[Said | None]:
    """A stream short of the copy roof: the dominant stall where captured, else the launch shape,
    else more bytes in flight per thread."""
    rec, ev = sc.rec, sc.ev
    stall = sc.said(Cause.STALL)  # one a faster sibling shares points at it (catalogue._stall)
    if stall:
        return [stall]
    # (a chain's launch overhead is no reason a stream falls short: its figures stay as facts)
    causes = [said for cause in _SHAPE if (said := sc.said(cause))]
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
