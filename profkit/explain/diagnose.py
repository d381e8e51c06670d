"""One row (a case, or one launch) -> its bottleneck, limiting unit, causes and next steps, as a
pipeline whose every stage is its own module:

1. classify: the record says what the kernel is and who owns it (record.kind, record.owner:
   profkit/explain/kinds.py), and its bottleneck is ncu's SOL decision with the overrides its
   counters make (bottleneck.OVERRIDES);
2. evaluate the catalogue's entries once: found, absent or not measured (catalogue.evaluate);
3. order: the ranked entries, then the bottleneck's story, one reason per cause, refuted causes
   dropped (story.tell), each cause with its kind's remedy;
4. a step pointing at a faster sibling is quoted with that sibling (siblings.quote);
5. filter: the owner, steps an earlier version tried, the declared conflicts, gains under the
   practical floor, each withheld with its reason (profkit/explain/filters.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from profkit.explain import catalogue, story
from profkit.explain.bottleneck import bottleneck
from profkit.explain.context import Context
from profkit.explain.evidence import Evidence
from profkit.explain.facts import put_facts
from profkit.explain.filters import fit_advice, worth_taking
from profkit.explain.model import Advice, Bottleneck, Reason, Unit
from profkit.explain.record import LaunchRecord
from profkit.explain.siblings import quote


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
    # what the catalogue's tests read besides the counters: the device (its SM count, large copy
    # and FMA peak), the case's dtype, read floor and siblings, then its bottleneck and its share
    # of the pipe's roof
    device = ctx.device
    rec = replace(rec, sm_count=device.sm_count or rec.sm_count, read_floor=ctx.read_floor,
                  siblings=ctx.siblings, copy_gbps=device.copy_gbps, dtype=ctx.dtype,
                  compute_capability=device.compute_capability, gpu=device.gpu)  # fmt: skip
    kind = bottleneck(rec, ev)  # 1. classify
    if kind is None:
        return None
    roof = put_facts(rec, ctx, ev)  # the roofs and the detail view's figures
    rec = replace(rec, bottleneck=kind, pipe_roof_pct=roof)
    outcomes = catalogue.evaluate(rec)  # 2. evaluate
    ev.put("kernel_kind", str(rec.kind))
    unit, said = story.tell(kind, rec, ctx, ev, outcomes)  # 3. order, with remedies
    said = quote(said, rec, ctx.siblings, ev)  # 4. a faster sibling's figures
    reasons = [r for r, _ in said]
    steps = [step for _, steps in said for step in steps]
    # 5. filter: the owner's advice and the steps ruled out, the declared conflicts, the gain
    steps, withheld = fit_advice(steps, rec.family, ctx.ruled_out, rec.kind)
    steps, conflicts = catalogue.resolve(steps, reasons, rec)
    steps, under = worth_taking(steps, ev, rec.device_p50_ms, ctx)
    return Diagnosis(kind, unit, reasons, steps, ev, withheld + conflicts + under,
                     outcomes.not_measured)  # fmt: skip
