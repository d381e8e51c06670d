"""The causes said for one launch, in their declared order, by one small engine (`tell`) that reads
the tables below and decides nothing of its own:

1. OPENING: every story opens with the catalogue's ranked entries (Entry.rank); coalescing is
   looked at for its figures, and a refuted cause's own figures stay as facts (UNSAID);
2. the bottleneck's Story (STORIES): its judge names the unit (the busy memory level, the busy
   pipe); the causes it looks at first are judged (Story.look); each Slot, where its flag holds
   (FLAGS), is the first of its causes found and not refuted, with its kind's remedy
   (catalogue.said; a slot names an entry, and says the cause that entry's judgment ended in:
   Found.cause), its steps in `bare` dropped where that flag holds; at UNSEEN_HERE, where
   nothing is said yet, the bottleneck's UNSEEN;
3. BEFORE: causes said ahead of the story (looked at after it);
4. DEMOTED: a roof cause said, the other causes stay as facts without the steps it names;
5. short of the roof (SHORT) with no cause named: WHY_SHORT's first tier that says anything;
   else an empty step of a SIBLING_STEP cause becomes a faster sibling's;
6. one reason per cause; the unit, where the judge names none: the launch where a cause of the
   story's `launch` is said, else the leading cause's entry's (Story.lead).

A step that points at a faster sibling is chosen here or in the catalogue as siblings.match(...)
and quoted by siblings.quote, the one place a sibling's figures are read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from profkit import thresholds as th
from profkit.explain import catalogue, compute, memory, stalls
from profkit.explain.context import Context, Said
from profkit.explain.evidence import Evidence
from profkit.explain.filters import STREAM_STEPS
from profkit.explain.kinds import KernelKind
from profkit.explain.model import Action, Advice, Bottleneck, Cause, Reason, Unit
from profkit.explain.record import LaunchRecord
from profkit.explain.siblings import match


@dataclass(frozen=True)
class Slot:
    """One place in a story: the first of `causes` said, where the scene holds `when`."""

    causes: tuple[Cause, ...]
    when: str = ""  # a flag of FLAGS that must hold ("": always)
    kind: KernelKind | None = None  # the remedy's kernel kind, where not the record's
    # (flag, actions): where the flag holds, the cause is said without these steps
    bare: tuple[str, frozenset[Action]] | None = None
    fact: bool = False  # looked at for its figures (Evidence), never said


@dataclass
class Scene:
    """What the engine reads and keeps while telling one launch: each cause said once (memo)."""

    rec: LaunchRecord
    ctx: Context
    ev: Evidence
    outcomes: catalogue.Outcomes
    flags: dict[str, bool] = field(default_factory=dict)  # each of FLAGS, whether it holds
    memo: dict[tuple[Cause, KernelKind | None], Said | None] = field(default_factory=dict)


Teller = Callable[[Scene], Said]


@dataclass(frozen=True)
class Story:
    """A bottleneck's story: its slots in the order they are said, and how its unit is named."""

    slots: tuple[Slot, ...]
    judge: Callable[[LaunchRecord, Evidence], Unit | None] | None = None  # the unit it is bound on
    launch: frozenset[Cause] = frozenset()  # said (not refuted by a sibling): bound on the launch
    lead: bool = False  # no unit else: the leading cause's entry's (catalogue.unit_of)
    # judged before the slots are filled (their figures lead the evidence): what decides the unit
    # or the order, said in their slots
    look: tuple[Slot, ...] = ()


def _without(said: Said | None, actions: frozenset) -> Said | None:
    """A cause kept as a fact, without the steps that would not help."""
    return (said[0], [s for s in said[1] if s.action not in actions]) if said else None


@dataclass(frozen=True)
class Unseen:
    """What is said where a story says nothing: open a section of ncu's report."""

    section: str
    quoted: bool  # the reason names the section (else: nothing under both SOL lines)
    profile: bool  # where no stalls were captured, profile them first instead


def _unseen(sc: Scene, row: Unseen) -> Said:
    if row.profile and not stalls.has_stalls(sc.rec):
        return Reason(Cause.NO_CAUSE_SEEN), [Advice(Action.PROFILE_STALLS)]
    detail = {"section": row.section}
    return Reason(Cause.NO_CAUSE_SEEN, [], detail if row.quoted else {}), [
        Advice(Action.OPEN_NCU, [], detail)
    ]


def _bytes_in_flight(sc: Scene) -> Said:
    """A stream short of the copy roof with nothing else seen: more bytes in flight per thread
    (the occupancy quoted), and the stalls profiled where none were captured."""
    rec, ev = sc.rec, sc.ev
    keys = []
    if rec.theoretical_occupancy_pct is not None:
        ev.put("theoretical_occupancy_pct", rec.theoretical_occupancy_pct)
        if rec.achieved_occupancy_pct is not None:
            ev.put("achieved_occupancy_pct", rec.achieved_occupancy_pct)
        keys = [k for k in ("theoretical_occupancy_pct", "achieved_occupancy_pct") if k in ev]
    steps = [Advice(Action.BYTES_IN_FLIGHT, keys)]
    if not stalls.has_stalls(rec):
        steps.append(Advice(Action.PROFILE_STALLS, []))
    return Reason(Cause.NO_CAUSE_SEEN, keys, {"short_of_roof": True}), steps


# --- the tables ---------------------------------------------------------------------------------

# the flags a Slot's `when` (or `bare`) reads, each why a slot is said or a step dropped
FLAGS = (
    "chain",  # a case of several launches: its re-reads are its passes (EXTRA_PASSES)
    "solo",  # one launch: its re-reads are EXTRA_READS
    "matrix",  # a matrix product (record.matrix): its pipes are the Tensor entry's, GEMM remedies
    "plain",  # no matrix product: a busy pipe gets its own kind's remedy
    # a matmul bound on its caches has tiles too small to reuse data; on DRAM a matrix-vector
    # product by its model (under 32 FLOP/B) streams its weights: not its pipes
    "tiles",
    # every SM holds a block and the launch does not cap the warps at a quarter: what the SMs
    # lack is loads in flight, said before the launch shape
    "loads_short",
    # every memory level under ncu's latency line (the zoo's pointer chase): wasted sectors cost
    # no time, a fact and not a step
    "memory_idle",
)

# one slot per ranked entry (Entry.rank), in the catalogue's declared order
RANKED = tuple(Slot((e.cause,)) for e in catalogue.RANKED)
# every story opens so: the ranked entries, and coalescing looked at (said where a story places it)
OPENING = (*RANKED, Slot((Cause.UNCOALESCED,), fact=True))
# refuted, yet its own figures (keys with this prefix) stay as facts: a stall refuted by programs
# too small, atomics' ordering or one program per SM (not its comparison with a faster sibling)
UNSAID: dict[Cause, str] = {Cause.STALL: "stall_"}
# the launch shape's causes, most specific first: the first found gives the first next step
SHAPE = tuple(
    Slot((c,))
    for c in (Cause.LAUNCH_OVERHEAD, Cause.SMALL_GRID, Cause.TAIL, Cause.LOW_OCCUPANCY,
              Cause.LOW_THEORETICAL_OCCUPANCY, Cause.SHORT_KERNEL)
)  # fmt: skip
# a matrix product's pipes: the Tensor entry's finding (busy, under-fed, unused, or its grid),
# else the busiest other pipe at its peak, with a GEMM's remedy
PIPES = Slot((Cause.TENSOR_BUSY, Cause.PIPE_BUSY), kind=KernelKind.GEMM)
# where nothing before it is said, the bottleneck's UNSEEN is
UNSEEN_HERE = Slot(())
# wasted sectors' steps, dropped where no memory level is busy
_IDLE_SECTORS = ("memory_idle", frozenset({Action.COALESCE, Action.INDEX_LOCALITY}))

STORIES: dict[Bottleneck, Story] = {
    # bound on a memory level: the traffic, and where the DRAM level stands to its roof (before
    # the re-reads served by the caches, a fact beside it)
    Bottleneck.MEMORY: Story(
        (
            replace(PIPES, when="tiles"),
            Slot((Cause.EXTRA_PASSES,), "chain"),
            Slot((Cause.EXTRA_READS,), "solo"),
            Slot((Cause.UNCOALESCED,)),
            Slot((Cause.BANK_CONFLICTS,)),
            Slot((Cause.CACHE_BOUND,)),
            Slot((Cause.AT_ROOF, Cause.SIBLING_FASTER, Cause.SHORT_OF_ROOF)),
            Slot((Cause.L2_REUSE,)),
            Slot((Cause.DATA_IN_L2,)),
        ),
        memory.busy_level,
        look=(Slot((Cause.EXTRA_READS,), "solo"),),  # the re-reads judged before the pipes
    ),
    # bound on a pipe: which, and why; then issue and the dominant stall
    Bottleneck.COMPUTE: Story(
        (
            replace(PIPES, when="matrix"),
            Slot((Cause.PIPE_BUSY, Cause.TENSOR_BUSY), "plain"),
            Slot((Cause.BANK_CONFLICTS,)),
            Slot((Cause.ISSUE_BOUND,)),
            Slot((Cause.STALL,)),
            UNSEEN_HERE,
        ),
        compute.pipe_unit,
    ),
    # under both SOL lines: the launch shape first, then the traffic, the pipes, the stalls
    Bottleneck.LATENCY: Story(
        (
            Slot((Cause.MEMORY_LATENCY,), "loads_short"),
            *SHAPE,
            Slot((Cause.EXTRA_PASSES,), "chain"),
            Slot((Cause.EXTRA_READS,), "solo"),
            Slot((Cause.UNCOALESCED,), bare=_IDLE_SECTORS),
            Slot((Cause.BANK_CONFLICTS,)),
            replace(PIPES, when="matrix"),
            Slot((Cause.ISSUE_BOUND,)),
            # long-scoreboard waits on an idle memory system: the latency, said once
            Slot((Cause.MEMORY_LATENCY, Cause.STALL)),
            UNSEEN_HERE,
            Slot((Cause.DATA_IN_L2,)),
        ),
        launch=frozenset(c for s in SHAPE for c in s.causes),
        lead=True,  # programs too small to amortize their launch are bound on its blocks
        # the shape decides the unit, the latency whether loads in flight lead
        look=(*SHAPE, Slot((Cause.MEMORY_LATENCY,))),
    ),
    # neither SOL line far above the other: the pipes, the traffic, the dominant stall
    Bottleneck.BALANCED: Story(
        (
            replace(PIPES, when="matrix"),
            Slot((Cause.UNCOALESCED,)),
            Slot((Cause.BANK_CONFLICTS,)),
            Slot((Cause.ISSUE_BOUND,)),
            Slot((Cause.STALL,)),
            UNSEEN_HERE,
        ),
    ),
}

# what is said where a story says nothing: the pipes' section, or under both SOL lines the stalls
# (profiled where none were captured)
UNSEEN: dict[Bottleneck, Unseen] = {
    Bottleneck.COMPUTE: Unseen("ComputeWorkloadAnalysis", quoted=True, profile=False),
    Bottleneck.LATENCY: Unseen("WarpStateStats", quoted=False, profile=True),
    Bottleneck.BALANCED: Unseen("ComputeWorkloadAnalysis", quoted=True, profile=False),
}

# said first (judged once the story is told): a short stream as fast as a copy of its bytes,
# whose stalls and shape are a copy's too
_AT_SIZE_ROOF = (Slot((Cause.AT_SIZE_ROOF,)),)
BEFORE: dict[Bottleneck, tuple[Slot, ...]] = {
    Bottleneck.LATENCY: _AT_SIZE_ROOF,
    Bottleneck.BALANCED: _AT_SIZE_ROOF,
}

# at a roof only fewer bytes help: said, the other causes stay as facts without these steps
DEMOTED: dict[Cause, frozenset[Action]] = {
    Cause.AT_ROOF: STREAM_STEPS,
    Cause.AT_SIZE_ROOF: STREAM_STEPS,
}

# short of the copy roof, or near it while a sibling streams the same bytes faster
SHORT = frozenset({Cause.SHORT_OF_ROOF, Cause.SIBLING_FASTER})

# short with no other cause named (said with a step): the first tier that says anything is why
WHY_SHORT: tuple[tuple[Slot | Teller, ...], ...] = (
    # the dominant stall (one a faster sibling shares points at it: catalogue._stall)
    (Slot((Cause.STALL,)),),
    # the launch shape (a chain's launch overhead is no reason a stream falls short: a fact)
    (Slot((Cause.LAUNCH_OVERHEAD,), fact=True), *SHAPE[1:]),
    (_bytes_in_flight,),
)

# a cause said with no step beside a named one, while a sibling sharing this is measurably
# faster: what differs between the two is its step (the first add_rmsnorm, told only to keep its
# re-read on chip, while Liger asked for 25% fewer load bytes)
SIBLING_STEP: dict[Cause, str] = {Cause.SHORT_OF_ROOF: "bytes"}


# --- the engine ---------------------------------------------------------------------------------


def tell(
    kind: Bottleneck, rec: LaunchRecord, ctx: Context, ev: Evidence, outcomes: catalogue.Outcomes
) -> tuple[Unit | None, list[Said]]:
    """The unit the launch is bound on and its causes, each with its steps, in order."""
    story, sc = STORIES[kind], Scene(rec, ctx, ev, outcomes)
    found = [_fill(sc, slot) for slot in OPENING]
    for cause, own in UNSAID.items():
        hit = outcomes.found.get(cause)
        if hit is not None and cause in outcomes.refuted:
            for key, value in hit.evidence.items():
                if key.startswith(own):
                    ev.put(key, value)
    unit = story.judge(rec, ev) if story.judge else None
    sc.flags = _flags(rec, ctx, outcomes, unit)
    for slot in story.look:
        _fill(sc, slot)
    for slot in story.slots:
        if slot is UNSEEN_HERE:
            found += [] if any(found) else [_unseen(sc, UNSEEN[kind])]
        else:
            found.append(_fill(sc, slot))
    found = [*filter(None, (_fill(sc, s) for s in BEFORE.get(kind, ()))), *found]
    roof = next((s for s in found if s and s[0].cause in DEMOTED), None)
    if roof:
        found = [s if s is roof else _without(s, DEMOTED[roof[0].cause]) for s in found]
    if any(s and s[0].cause in SHORT for s in found) and not any(
        s and s[1] and s[0].cause not in SHORT for s in found
    ):
        for tier in WHY_SHORT:
            if said := [s for slot in tier if (s := _fill(sc, slot))]:
                found += said
                break
    elif ctx.siblings:
        found = [(s[0], [match(same)]) if s and not s[1] and (same := SIBLING_STEP.get(s[0].cause))
                 and ctx.siblings.faster(same) is not None else s for s in found]  # fmt: skip
    said: list[Said] = []
    for s in found:  # one reason per cause (a small grid is both a shape and a matmul cause)
        if s and s[0].cause not in outcomes.refuted and all(s[0].cause != x[0].cause for x in said):
            said.append(s)
    if any(r.cause in story.launch and not r.detail.get("refuted") for r, _ in said):
        unit = Unit.LAUNCH  # a refuted grid is no launch bound
    if unit is None and story.lead and said:
        unit = catalogue.unit_of(outcomes, said[0][0].cause)
    return unit, said


def _fill(sc: Scene, slot: Slot | Teller) -> Said | None:
    """A slot's cause said (the first of its causes found, each said once), or what a teller
    says; None where the slot's flag does not hold, nothing is found, or it is a fact."""
    if callable(slot):
        return slot(sc)
    if slot.when and not sc.flags[slot.when]:
        return None
    said = None
    for cause in slot.causes:
        hit = sc.outcomes.by_entry.get(cause)
        cause = (hit.cause or cause) if hit else cause  # where the entry's judgment ended
        if (cause, slot.kind) not in sc.memo:
            kind = slot.kind or sc.rec.kind
            sc.memo[cause, slot.kind] = catalogue.said(sc.outcomes, cause, kind, sc.ev)
        if said := sc.memo[cause, slot.kind]:
            break
    if said and slot.bare and sc.flags[slot.bare[0]]:
        said = _without(said, slot.bare[1])
    return None if slot.fact else said


def _flags(
    rec: LaunchRecord, ctx: Context, outcomes: catalogue.Outcomes, unit: Unit | None
) -> dict[str, bool]:
    """Whether each of FLAGS holds for this launch (read from the record and its context once)."""
    chain = (rec.kernel_count or 1) > 1
    dense = (rec.flop_per_byte or 0.0) >= th.MATMUL_INTENSITY_FLOP_PER_BYTE
    grid, sms = rec.grid_size, ctx.device.sm_count
    capped = Cause.LOW_THEORETICAL_OCCUPANCY in outcomes.found and (
        Cause.LOW_THEORETICAL_OCCUPANCY not in outcomes.refuted
    )
    levels = [v for v in (rec.memory_pct, rec.dram_pct, rec.l2_pct, rec.l1_pct) if v is not None]
    return {
        "chain": chain,
        "solo": not chain,
        "matrix": rec.matrix,
        "plain": not rec.matrix,
        "tiles": rec.matrix and (unit != Unit.DRAM or dense),
        "loads_short": grid is not None and bool(sms) and grid >= sms and not capped,
        "memory_idle": bool(levels) and max(levels) < th.LATENCY_BOUND_PCT,
    }
