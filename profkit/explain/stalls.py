"""Why warps wait: the dominant warp-state stall reason, and the next step it points to.

Reasons are Nsight Compute's (smsp__warp_issue_stalled_<reason>_per_warp_active.pct, the
WarpStateStats section); "not selected" is left out of the sum, since a warp not selected had an
eligible peer and costs nothing.
"""

from __future__ import annotations

from profkit import thresholds as th
from profkit.explain.context import Context, Said
from profkit.explain.evidence import Evidence
from profkit.explain.model import Action, Advice, Cause, Reason
from profkit.explain.record import LaunchRecord

# stall reason -> the step that addresses it
ADVICE_TEXT: dict[str, Action] = {
    "long_scoreboard": Action.HIDE_LATENCY,  # waiting on global/local memory
    "lg_throttle": Action.WIDER_LOADS,  # the global-memory queue is full of small requests
    "barrier": Action.FEWER_BARRIERS,
    "membar": Action.FEWER_BARRIERS,
    "mio_throttle": Action.SHARED_PRESSURE,  # shared memory, special math, dynamic branches
    "short_scoreboard": Action.SHARED_PRESSURE,
    "math_pipe_throttle": Action.CUT_INSTRUCTIONS,
    "wait": Action.ILP,  # fixed-latency dependencies
    "branch_resolving": Action.CUT_INSTRUCTIONS,
    "no_instruction": Action.CUT_INSTRUCTIONS,
    "tex_throttle": Action.OPEN_NCU,
    "drain": Action.OPEN_NCU,
}


def known_stalls(rec: LaunchRecord) -> dict[str, float]:
    return {r: rec.stalls[r] for r in [*ADVICE_TEXT, "not_selected"] if r in rec.stalls}


def dominant_stall(rec: LaunchRecord, ctx: Context, ev: Evidence) -> Said | None:
    """The record's dominant stall (LaunchRecord.dominant_stall: one sum, one denominator) with
    the step it points to."""
    dominant = rec.dominant_stall
    if dominant is None:
        return None
    reason, value, share = dominant
    if share < th.DOMINANT_STALL_SHARE:
        return None
    key = f"stall_{reason}_pct"
    ev.put(key, value)
    ev.put("stall_share_pct", share * 100)
    keys = [key, "stall_share_pct"]
    detail = {"stall": reason}
    if rec.matrix and reason in ("barrier", "long_scoreboard"):
        # in a tiled tl.dot loop these are the waits for the next stage's tiles, not a
        # reduction's barriers: the remedy is a deeper pipeline, not fewer block-wide syncs
        return Reason(Cause.STALL, keys, detail), [Advice(Action.DEEPER_PIPELINE, keys, detail)]
    if ADVICE_TEXT.get(reason, Action.OPEN_NCU) == Action.OPEN_NCU:
        return Reason(Cause.STALL, keys, detail), [
            Advice(Action.OPEN_NCU, keys, {"section": "WarpStateStats"})
        ]
    return Reason(Cause.STALL, keys, detail), [Advice(ADVICE_TEXT[reason], keys, detail)]


def stall_share(rec: LaunchRecord, reason: str) -> float | None:
    """`reason`'s share of all stall cycles in a record (0..1: LaunchRecord.stall_share, the one
    denominator), None where that reason was not captured."""
    return rec.stall_share(reason) if reason in rec.stalls else None


def has_stalls(rec: LaunchRecord) -> bool:
    return bool(known_stalls(rec))
