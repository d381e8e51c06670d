"""The other variants of a case (same dtype and shape), as evidence against a claim about a roof.

A case "at the copy roof" is refuted when a sibling moves at least as many DRAM bytes (or the same
model bytes) measurably faster: the same-size copy is then not the roof at that size. A case on a
busy Tensor pipe is not told to "do less math" when a sibling does the same FLOPs in the same or
less time: the sibling is where to look. "Measurably" is profkit.stats' outcome, as in
verdicts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pandas as pd

from profkit import stats
from profkit import thresholds as th
from profkit.explain.evidence import Evidence, timed
from profkit.explain.model import Action, Advice, Reason
from profkit.explain.record import LaunchRecord

# launch and traffic facts compared with a sibling, most telling first: (field, kind). A traffic
# fact is named only where the faster sibling moves less, an occupancy only where it holds more
# warps (the other way round they cannot be why it is faster); a launch shape either way.
_FACTS = (
    ("dram_bytes", "traffic"),
    ("global_ld_bytes_requested", "traffic"),
    ("grid_size", "launch"),
    ("block_size", "launch"),
    ("registers_per_thread", "launch"),
    ("achieved_occupancy_pct", "occupancy"),
    ("theoretical_occupancy_pct", "occupancy"),
)
MAX_DIFFERENCES = 3


@dataclass
class Siblings:
    """A case's row, the other variants' rows of the same case, and the run's samples."""

    row: Mapping
    others: list[Mapping]
    samples: pd.DataFrame | None = None
    _fastest: dict | None = field(default=None, repr=False)

    def faster(self, same: str) -> tuple[Mapping, stats.MedianRatio] | None:
        """The fastest sibling sharing `same` with this case, and how the two compare (ratio:
        this case's median over the sibling's): "bytes", one moving at least this case's DRAM
        bytes (or its model bytes) measurably faster; "flops", one doing the same model FLOPs in
        the same or less time; "programs", one kernel like this case, measurably faster on a grid
        no larger than this case's (proof that the grid is not what limits it). Every sibling is
        compared and judged once, at the first question."""
        if self._fastest is None:
            self._fastest = self._judge()
        return self._fastest.get(same)

    def _judge(self) -> dict[str, tuple[Mapping, stats.MedianRatio]]:
        fastest: dict[str, tuple[Mapping, stats.MedianRatio]] = {}
        if not timed(self.row):
            return fastest
        me = LaunchRecord.of(self.row)
        for other in self.others:
            if not timed(other):
                continue
            c = stats.compare_cases(self.row, other, self.samples)
            them = LaunchRecord.of(other)
            faster = c.outcome == "slower"
            mine, theirs = me.dram_bytes, them.dram_bytes
            model, their_model = me.model_bytes, them.model_bytes
            shares = {
                "bytes": faster
                and (
                    (mine is not None and theirs is not None and theirs >= mine)
                    or _same(model, their_model)
                    or bool(model and their_model and their_model >= model)
                ),
                "flops": c.outcome in ("slower", "noise")
                and _same(me.model_flops, them.model_flops),
                "programs": faster
                and me.grid_size is not None
                and (them.kernel_count or 1) <= 1
                and (them.grid_size or float("inf")) <= me.grid_size,
            }
            for same, holds in shares.items():  # the first of equals stays
                if holds and (same not in fastest or c.ratio > fastest[same][1].ratio):
                    fastest[same] = (other, c)
        return fastest


def _same(a: float | None, b: float | None) -> bool:
    return bool(a and b) and abs(a - b) <= th.SAME_WORK_TOLERANCE * max(a, b)


def match(same: str) -> Advice:
    """The step a cause's story chooses where a sibling sharing `same` ("bytes" or "flops") is
    faster: quote fills in which sibling and what differs."""
    return Advice(Action.MATCH_SIBLING, [], {"same": same})


def quote(
    said: list[tuple[Reason, list[Advice]]], rec: LaunchRecord, siblings: Siblings | None,
    ev: Evidence,
) -> list[tuple[Reason, list[Advice]]]:  # fmt: skip
    """Each step a story chose as match(...), pointed at its sibling (Siblings.faster); the
    sibling's keys are quoted by the cause's reason too."""
    out = []
    for reason, steps in said:
        quoted = []
        for step in steps:
            if step.action == Action.MATCH_SIBLING and "sibling" not in step.detail and siblings:
                same = step.detail["same"]
                more, step = sibling_step(rec, siblings.faster(same), ev, same)
                reason = Reason(reason.cause, [*reason.keys, *more], reason.detail)
            quoted.append(step)
        out.append((reason, quoted))
    return out


def sibling_step(
    rec: LaunchRecord, found: tuple[Mapping, stats.MedianRatio], ev: Evidence, same: str
) -> tuple[list[str], Advice]:
    """Record the sibling in the evidence and build the step that points at it; `same` is what
    the two share ("bytes" or "flops"). Returns the evidence keys and the step."""
    other, c = found
    theirs = LaunchRecord.of(other)
    ev.put("sibling_variant", str(other.get("variant")))
    ev.put("sibling_time_share_pct", 100 / c.ratio)  # the sibling's time over this case's
    ev.put("sibling_p50_ms", theirs.device_p50_ms)
    keys = ["sibling_variant", "sibling_time_share_pct", "sibling_p50_ms"]
    if same == "bytes" and theirs.dram_bytes is not None:
        ev.put("sibling_dram_bytes", theirs.dram_bytes)
        keys.append("sibling_dram_bytes")
        if rec.dram_bytes is not None:
            ev.put("dram_bytes", rec.dram_bytes)
            keys.append("dram_bytes")
    differs = differences(rec, theirs)
    for d in differs:
        ev.put(f"sibling_{d['key']}", d["sibling"])
        ev.put(d["key"], d["this"])
    detail = {
        "sibling": str(other.get("variant")),
        "time_share_pct": 100 / c.ratio,
        "outcome": c.outcome,
        "same": same,
        "differs": differs,
        # the facts held by both and found alike: with no difference, the gap is in the code
        "compared": [] if differs else facts_in_common(rec, theirs),
    }
    return keys, Advice(Action.MATCH_SIBLING, keys, detail)


def facts_in_common(rec: LaunchRecord, other: LaunchRecord) -> list[str]:
    """The launch and traffic facts both records hold."""
    return [f for f, _ in _FACTS if getattr(rec, f) is not None and getattr(other, f) is not None]


def differences(rec: LaunchRecord, other: LaunchRecord) -> list[dict]:
    """The launch and traffic facts in which the sibling differs from this case in a way that can
    be why it is faster, most telling first."""
    out = []
    for col, kind in _FACTS:
        mine, theirs = getattr(rec, col), getattr(other, col)
        if mine is None or theirs is None:
            continue
        if kind == "occupancy":
            differ = theirs - mine >= th.OCCUPANCY_GAP_PCT
        else:
            low, high = sorted((mine, theirs))
            differ = low > 0 and high / low >= th.SIBLING_LAUNCH_RATIO
            differ = differ and (kind == "launch" or theirs < mine)
        if differ:
            out.append({"key": col, "this": mine, "sibling": theirs})
    return out[:MAX_DIFFERENCES]
