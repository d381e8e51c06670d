"""The last stage of a diagnosis: which of its steps stand. In order: the owner's (a library
kernel gets library advice by its family and kind, Inductor's code the compiler's options), the
steps an earlier version tried without effect (fit_advice), the declared conflicts
(catalogue.CONFLICTS, read by catalogue.resolve), and the gain floor (worth_taking: a tuning
step whose gain, to the roof or to a faster sibling, is under the practical floor is withheld).
Each withheld step is kept with its reason.
"""

from __future__ import annotations

from collections.abc import Mapping

from profkit import stats
from profkit.explain.context import Context
from profkit.explain.evidence import Evidence
from profkit.explain.kernel_family import FUSED_OPS, GEMM, LIBRARY, Family
from profkit.explain.kinds import MATRIX, KernelKind
from profkit.explain.model import Action, Advice


def gain_us(ev: Mapping, ms: float | None, ctx: Context) -> float | None:
    """Device time a case (of `ms` device time) could save: to its roof, or to a sibling doing
    the same work measurably faster, whichever is more; None where neither is known.

    A case has two floors, its bytes at the same-size copy's rate (else the large copy's) and its
    work at the pipe's peak at its clock: it can gain at most the distance to the higher one,
    whatever ncu's SOL calls its bound (softmax fp16 4096x4096, "compute-bound" on a 38%-busy LSU
    pipe at 95% of a same-size copy, has 1 us to gain, not 17)."""
    if not ms:
        return None
    gains = []
    copy = ev.get("pct_of_same_size_copy_pct", ev.get("pct_of_copy_pct"))
    shares = [s for s in (copy, ev.get("pct_of_pipe_roof_pct")) if s is not None]
    if shares:
        gains.append(max(0.0, ms * 1e3 * (1 - min(max(shares), 100.0) / 100)))
    found = ctx.siblings and (ctx.siblings.faster("bytes") or ctx.siblings.faster("flops"))
    if found and found[1].ratio > 1:
        gains.append(ms * 1e3 * (1 - 1 / found[1].ratio))
    return max(gains) if gains else None


def worth_taking(
    steps: list[Advice], ev: Evidence, ms: float | None, ctx: Context
) -> tuple[list, list]:
    """Each tuning step states the gain it can bring (to the roof, or to a faster sibling);
    where that gain is under the practical floor the step is withheld, and the case says that
    only fewer bytes help."""
    gain = gain_us(ev, ms, ctx)
    if gain is None:
        return steps, []
    ev.put("headroom_us", gain)
    floor = max(stats.PRACTICAL_FLOOR_US, ms * 1e3 * stats.PRACTICAL_FLOOR_PCT / 100)
    kept, withheld = [], []
    for step in steps:
        if step.action not in TUNING:
            kept.append(step)
        elif gain < floor:
            withheld.append({"action": str(step.action), "why": "under_floor", "gain_us": gain})
        else:
            kept.append(Advice(step.action, step.because, {**step.detail, "gain_us": gain}))
    if withheld and not kept:
        kept.append(Advice(Action.FEWER_BYTES, ["headroom_us"], {"under_floor": True}))
    return kept, withheld


# what would make a stream faster per byte: moot for one already as fast as a same-size copy
STREAM_STEPS = frozenset(
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

# Steps that make the kernel itself faster towards its roof: each is worth taking only where the gap
# to that roof clears the practical floor (profkit.stats: 2% and 1 us of device time). CUDA
# graphs are not among them: they remove the launch, which no device-time roof measures.
TUNING = STREAM_STEPS | frozenset(
    {
        Action.FEWER_BARRIERS,
        Action.SHARED_PRESSURE,
        Action.COALESCE,
        Action.PAD_SHARED,
        Action.FEED_TENSOR,
        Action.DEEPER_PIPELINE,
        Action.CUT_INSTRUCTIONS,
        Action.CHEAPER_MATH,
        Action.UNIFORM_BRANCHES,
        Action.CUT_SPILLS,
        Action.PRIVATIZE_ATOMICS,
        Action.INDEX_LOCALITY,
        Action.LARGER_PROGRAMS,
        Action.LESS_SHARED,
        Action.RELAX_ATOMICS,
    }
)


# Steps that change a kernel's own code: not the user's to take for a library kernel.
CODE_STEPS = frozenset(
    {
        Action.RAISE_OCCUPANCY,
        Action.BALANCE_WORK,
        Action.MORE_PROGRAMS,
        Action.WHOLE_WAVES,
        Action.BYTES_IN_FLIGHT,
        Action.WIDER_LOADS,
        Action.COALESCE,
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
        Action.DEEPER_PIPELINE,
        Action.CUT_SPILLS,
        Action.PRIVATIZE_ATOMICS,
        Action.UNIFORM_BRANCHES,
        Action.LARGER_PROGRAMS,
        Action.LESS_SHARED,
        Action.RELAX_ATOMICS,
    }
)


def fit_advice(
    steps: list[Advice],
    family: Family | None,
    ruled_out: Mapping[Action, str],
    kind: KernelKind | None = None,
) -> tuple[list[Advice], list[dict]]:
    """Library kernels get library advice, by their owner's family and their kind (a matrix
    product's is its inputs and options, a whole fused op's another backend too); ruled-out
    steps are withheld; no step twice."""
    out: list[Advice] = []
    withheld: list[dict] = []
    whole_op = kind in (KernelKind.ATTENTION, KernelKind.CONVOLUTION) and family not in FUSED_OPS
    for step in steps:
        d = step.detail
        if (
            step.action == Action.MATCH_SIBLING
            and (family in LIBRARY or family == Family.INDUCTOR)
            and d.get("sibling")
            and d.get("outcome") != "noise"
        ):
            # a faster sibling of code the user does not write: not what it does differently
            # (its block size and registers are not the user's to set) but the sibling itself,
            # another backend for the op; a tied sibling stays a comparison
            kept = {k: v for k, v in d.items() if k not in ("differs", "compared")}
            detail = {**kept, "library": str(family), "use_sibling": True}
            step = Advice(Action.LIBRARY_OPTIONS, step.because, detail)
        if family == Family.INDUCTOR and step.action in CODE_STEPS:
            step = Advice(Action.COMPILER_OPTIONS, step.because, {"instead_of": str(step.action)})
        if family in LIBRARY and step.action in CODE_STEPS:
            detail = {"library": str(family)}
            if family == Family.LIGER:  # Triton code the user calls, not tunes
                action = Action.LIBRARY_OPTIONS
            elif kind == KernelKind.ATTENTION:  # a whole fused op: another backend or option
                action = Action.LIBRARY_OPTIONS
                detail["whole_op"] = str(kind)
            elif family in GEMM or family in FUSED_OPS or kind in MATRIX:
                action = Action.LIBRARY_SHAPES
                if whole_op:  # CUTLASS's fmha or convolutions: a whole op, not a bare GEMM
                    detail["whole_op"] = str(kind)
            else:
                action = Action.FUSE
            step = Advice(action, step.because, detail)
        if step.action in ruled_out:
            withheld.append({"action": str(step.action), "why": ruled_out[step.action]})
            continue
        if all(s.action != step.action for s in out):
            out.append(step)
    return out, withheld
