"""One row (a case, or one launch) -> its bottleneck, limiting unit, causes and next steps.

The bottleneck is Nsight Compute's speed-of-light decision (SOLBottleneck), except that a Tensor
pipe at or above TENSOR_BUSY_PCT makes it compute-bound whatever the memory line says; the unit, the
causes and the steps follow from the pipes, the memory hierarchy, the launch shape and the stalls,
each in its own module. Steps a library kernel cannot take become library advice; steps an earlier
version already tried without effect are withheld, with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from profkit import thresholds as th
from profkit.explain import compute, memory, shape, stalls
from profkit.explain.context import Context, Said
from profkit.explain.evidence import Evidence, num
from profkit.explain.library import ELEMENTWISE, GEMM, LIBRARY
from profkit.explain.model import Action, Bottleneck, Cause, Reason, Step, Unit
from profkit.explain.roofs import compute_roof, memory_roof, tensor_pct


def classify(memory_pct: float, sm_pct: float) -> Bottleneck:
    """Nsight Compute's SOLBottleneck decision: memory, compute, latency or balanced."""
    if memory_pct >= th.HIGH_THROUGHPUT_PCT or sm_pct >= th.HIGH_THROUGHPUT_PCT:
        return Bottleneck.COMPUTE if sm_pct >= memory_pct else Bottleneck.MEMORY
    if memory_pct < th.LATENCY_BOUND_PCT and sm_pct < th.LATENCY_BOUND_PCT:
        return Bottleneck.LATENCY
    # counters carry float noise (65.3 - 55.3 = 9.99...): compare the gap at micro-point resolution
    if round(abs(sm_pct - memory_pct), 6) >= th.SOL_GAP_PCT:
        return Bottleneck.COMPUTE if sm_pct > memory_pct else Bottleneck.MEMORY
    return Bottleneck.BALANCED


@dataclass
class Diagnosis:
    bottleneck: Bottleneck | None
    unit: Unit | None
    reasons: list[Reason] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    evidence: Evidence = field(default_factory=Evidence)
    ruled_out: list[dict] = field(default_factory=list)


def diagnose(m: Mapping, ctx: Context) -> Diagnosis | None:
    """None when the row has no throughput counters."""
    mem_key = "memory_throughput_pct" if num(m, "memory_throughput_pct") is not None else None
    mem_key = mem_key or "dram_throughput_pct"
    mem, sm = num(m, mem_key), num(m, "sm_throughput_pct")
    if mem is None or sm is None:
        return None
    ev = Evidence()
    ev.put(mem_key, mem)
    ev.put("sm_throughput_pct", sm)
    kind = classify(mem, sm)
    tensor = tensor_pct(m)
    if tensor is not None and tensor >= th.TENSOR_BUSY_PCT and kind != Bottleneck.COMPUTE:
        # a Tensor pipe this busy is the limit: the L1/shared traffic that ncu's SOL weighs above
        # the SM's is the MMAs' own operand feed, not a separate memory bound
        ev.put("sol_bottleneck", str(kind))
        kind = Bottleneck.COMPUTE
    compute_roof(m, ctx.dtype, ctx.device, ev)
    memory_roof(m, ctx.device, ev)
    memory.hierarchy_facts(m, ev)
    compute.pipe_facts(m, ev)
    stalls.stall_facts(m, ev)
    found: list[Said | None] = []
    unit: Unit | None = None
    chain = (num(m, "kernel_count") or 1) > 1
    if kind == Bottleneck.MEMORY:
        unit = memory.busy_level(m, ev)
        found += [
            # a matmul bound on its caches is one whose tiles are too small to reuse data
            compute.pipe_detail(m, ctx, ev) if ctx.matmul_like(m) else None,
            memory.chain_traffic(m, ctx, ev) if chain else memory.extra_reads(m, ctx, ev),
            memory.uncoalesced(m, ctx, ev),
            memory.bank_conflicts(m, ctx, ev),
            memory.cache_bound(m, ctx, ev),
            memory.dram_level(m, ctx, ev, chain=chain),
            memory.data_in_l2(m, ctx, ev),
        ]
        # short of the roof, or near it while a sibling streams the same bytes faster
        short = any(s and s[0].cause in _SHORT for s in found)
        specific = any(s and s[1] and s[0].cause != Cause.SIBLING_FASTER for s in found)
        if short and not specific:
            found += _why_short(m, ctx, ev)
    elif kind == Bottleneck.COMPUTE:
        unit = compute.pipe_unit(m, ev)
        found += [
            compute.pipe_detail(m, ctx, ev),
            memory.bank_conflicts(m, ctx, ev),
            stalls.dominant_stall(m, ctx, ev),
        ]
        if not any(found):
            found.append(_open("ComputeWorkloadAnalysis"))
    elif kind == Bottleneck.LATENCY:
        causes = shape.shape_causes(m, ctx, ev)
        if any(not r.detail.get("refuted") for r, _ in causes):  # a refuted grid is no launch bound
            unit = Unit.LAUNCH
        found += [
            *causes,
            memory.chain_traffic(m, ctx, ev) if chain else memory.extra_reads(m, ctx, ev),
            memory.uncoalesced(m, ctx, ev),
            memory.bank_conflicts(m, ctx, ev),
            compute.pipe_detail(m, ctx, ev) if ctx.matmul_like(m) else None,
            stalls.dominant_stall(m, ctx, ev),
        ]
        if not any(found):
            found.append(_nothing_seen(m))
        found.append(memory.data_in_l2(m, ctx, ev))
    else:  # balanced
        found += [
            compute.pipe_detail(m, ctx, ev) if ctx.matmul_like(m) else None,
            memory.uncoalesced(m, ctx, ev),
            memory.bank_conflicts(m, ctx, ev),
            stalls.dominant_stall(m, ctx, ev),
        ]
        if not any(found):
            found.append(_open("ComputeWorkloadAnalysis"))
    if kind in (Bottleneck.LATENCY, Bottleneck.BALANCED):
        roof = memory.at_size_roof(m, ctx, ev)
        if roof:  # a copy of the same bytes is no faster: its stalls and shape are a copy's too
            found = [roof, *(_without(s, _STREAM_STEPS) for s in found)]
    said: list[Said] = []
    for s in found:  # one reason per cause (a small grid is both a shape and a matmul cause)
        if s and all(s[0].cause != x[0].cause for x in said):
            said.append(s)
    diagnosis = Diagnosis(kind, unit, [r for r, _ in said], evidence=ev)
    steps = [step for _, steps in said for step in steps]
    diagnosis.steps, diagnosis.ruled_out = fit_steps(steps, ctx)
    return diagnosis


_SHORT = (Cause.SHORT_OF_ROOF, Cause.SIBLING_FASTER)
# what would make a stream faster per byte: moot for one already as fast as a same-size copy
_STREAM_STEPS = frozenset(
    {
        Action.HIDE_LATENCY,
        Action.BYTES_IN_FLIGHT,
        Action.MORE_PROGRAMS,
        Action.WHOLE_WAVES,
        Action.RAISE_OCCUPANCY,
        Action.BALANCE_WORK,
        Action.WIDER_LOADS,
        Action.ILP,
    }
)


def _without(said: Said | None, actions: frozenset) -> Said | None:
    """A cause kept as a fact, without the steps that would not help."""
    return (said[0], [s for s in said[1] if s.action not in actions]) if said else None


def _why_short(m: Mapping, ctx: Context, ev: Evidence) -> list[Said | None]:
    """A stream short of the copy roof: the dominant stall where captured, else the launch shape,
    else more bytes in flight per thread."""
    stall = stalls.dominant_stall(m, ctx, ev)
    if stall:
        return [stall]
    causes = [c for c in shape.shape_causes(m, ctx, ev) if c[0].cause != Cause.LAUNCH_OVERHEAD]
    if causes:
        return causes
    occupancy = num(m, "theoretical_occupancy_pct")
    keys = []
    if occupancy is not None:
        ev.put("theoretical_occupancy_pct", occupancy)
        achieved = num(m, "achieved_occupancy_pct")
        if achieved is not None:
            ev.put("achieved_occupancy_pct", achieved)
        keys = [k for k in ("theoretical_occupancy_pct", "achieved_occupancy_pct") if k in ev]
    steps = [Step(Action.BYTES_IN_FLIGHT, keys)]
    if not stalls.has_stalls(m):
        steps.append(Step(Action.PROFILE_STALLS, []))
    return [(Reason(Cause.NO_CAUSE_SEEN, keys, {"short_of_roof": True}), steps)]


def _nothing_seen(m: Mapping) -> Said:
    step = (
        Step(Action.PROFILE_STALLS) if not stalls.has_stalls(m) else _open("WarpStateStats")[1][0]
    )
    return Reason(Cause.NO_CAUSE_SEEN), [step]


def _open(section: str) -> Said:
    return Reason(Cause.NO_CAUSE_SEEN, [], {"section": section}), [
        Step(Action.OPEN_NCU, [], {"section": section})
    ]


# Steps that change a kernel's own code: not the user's to take for a library kernel.
_CODE_STEPS = frozenset(
    {
        Action.RAISE_OCCUPANCY,
        Action.BALANCE_WORK,
        Action.MORE_PROGRAMS,
        Action.WHOLE_WAVES,
        Action.BYTES_IN_FLIGHT,
        Action.WIDER_LOADS,
        Action.HIDE_LATENCY,
        Action.FEWER_BARRIERS,
        Action.SHARED_PRESSURE,
        Action.ILP,
        Action.PAD_SHARED,
        Action.USE_TENSOR_CORES,
        Action.FEED_TENSOR,
        Action.LESS_MATH,
        Action.CUT_INSTRUCTIONS,
        Action.REMOVE_EXTRA_READS,
    }
)


def fit_steps(steps: list[Step], ctx: Context) -> tuple[list[Step], list[dict]]:
    """Library kernels get library advice; ruled-out steps are withheld; no step twice."""
    out: list[Step] = []
    withheld: list[dict] = []
    for step in steps:
        if ctx.family in LIBRARY and step.action in _CODE_STEPS:
            action = Action.LIBRARY_SHAPES if ctx.family in GEMM else Action.FUSE
            if ctx.family in ELEMENTWISE or ctx.family not in GEMM:
                action = Action.FUSE
            step = Step(action, step.because, {"library": str(ctx.family)})
        if step.action in ctx.ruled_out:
            withheld.append({"action": str(step.action), "why": ctx.ruled_out[step.action]})
            continue
        if all(s.action != step.action for s in out):
            out.append(step)
    return out, withheld
