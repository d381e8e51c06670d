"""Why warps wait: the step each warp-state stall reason points to (the dominant one is the
catalogue's STALL entry).

Reasons are Nsight Compute's (smsp__warp_issue_stalled_<reason>_per_warp_active.pct, the
WarpStateStats section); "not selected" is left out of the sum, since a warp not selected had an
eligible peer and costs nothing.
"""

from __future__ import annotations

from profkit.explain.model import Action
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


def has_stalls(rec: LaunchRecord) -> bool:
    return bool(known_stalls(rec))
