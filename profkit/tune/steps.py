"""explain's next steps, as moves of a variant's tunable parameters.

explain says, per case, what limits it (causes) and what to change (next steps, each with the gain
it can bring; a step whose gain is under the practical floor is withheld there). This module maps
a step's action onto the parameters by their role, read from their names:
- tile: the work of one program (BLOCK*, ROWS, BM, BN, TILE*): bigger keeps more bytes in flight
  and cuts instructions per element; smaller gives more programs and fewer values per thread.
- warps (num_warps): more spreads a program's values over more threads (fewer registers each).
- stages (num_stages): more keeps more loads of a loop in flight (more shared memory).
- depth (BK): the K step of a matmul loop.
- split (SPLIT_K): more programs over K.
Each move changes one parameter by one step along its declared values, so every configuration
measured is one step from the one explained, and the step that proposed it is recorded with it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from profkit.explain import Action, Cause, Finding

TILE, WARPS, STAGES, DEPTH, SPLIT = "tile", "warps", "stages", "depth", "split"


def role(name: str) -> str | None:
    if name == "num_warps":
        return WARPS
    if name == "num_stages":
        return STAGES
    if name in ("BK", "BLOCK_K"):
        return DEPTH
    if name in ("SPLIT_K", "SPLITK"):
        return SPLIT
    if re.fullmatch(r"(BLOCK|TILE)(_[A-Z]+)?|ROWS|BM|BN|BLOCK_M|BLOCK_N", name):
        return TILE
    return None


# (role, direction) moves per action, in the order tried; the words say why each helps
MOVES: dict[Action, tuple[str, list[tuple[str, int]]]] = {
    Action.BYTES_IN_FLIGHT: (
        "more loads in flight: more stages, more elements per thread",
        [(STAGES, +1), (TILE, +1), (WARPS, -1)],
    ),
    Action.HIDE_LATENCY: (
        "loads waited on: more stages or more independent loads per thread",
        [(STAGES, +1), (TILE, +1), (WARPS, -1)],
    ),
    Action.ILP: ("more independent work per thread", [(TILE, +1), (WARPS, -1)]),
    Action.DEEPER_PIPELINE: ("a deeper pipeline: more stages", [(STAGES, +1), (DEPTH, +1)]),
    Action.FEED_TENSOR: (
        "feed the Tensor Cores: larger tiles, more stages",
        [(TILE, +1), (STAGES, +1), (DEPTH, +1)],
    ),
    Action.CUT_SPILLS: ("spills: more warps or smaller tiles", [(WARPS, +1), (TILE, -1)]),
    Action.RAISE_OCCUPANCY: (
        "occupancy: fewer values per thread, less shared memory",
        [(WARPS, +1), (TILE, -1), (STAGES, -1)],
    ),
    Action.MORE_PROGRAMS: ("too few programs: smaller tiles or split-K", [(TILE, -1), (SPLIT, +1)]),
    Action.WHOLE_WAVES: ("a partial last wave: another tile size", [(TILE, -1), (TILE, +1)]),
    Action.BALANCE_WORK: ("uneven work: smaller tiles", [(TILE, -1)]),
    Action.CUT_INSTRUCTIONS: (
        "too many instructions: more elements per thread",
        [(TILE, +1), (WARPS, -1)],
    ),
    Action.FEWER_BARRIERS: ("barrier waits: fewer warps per program", [(WARPS, -1)]),
    Action.SHARED_PRESSURE: ("shared-memory pressure: fewer stages, wider K", [(STAGES, -1)]),
}

# the causes each action answers, to name the cause a configuration was measured for
ANSWERS: dict[Action, tuple[Cause, ...]] = {
    Action.BYTES_IN_FLIGHT: (Cause.MEMORY_LATENCY, Cause.SHORT_OF_ROOF, Cause.STALL),
    Action.HIDE_LATENCY: (Cause.MEMORY_LATENCY, Cause.STALL, Cause.SHORT_OF_ROOF),
    Action.ILP: (Cause.STALL,),
    Action.DEEPER_PIPELINE: (Cause.STALL, Cause.TENSOR_UNDERFED),
    Action.FEED_TENSOR: (Cause.TENSOR_UNDERFED,),
    Action.CUT_SPILLS: (Cause.REGISTER_SPILLS,),
    Action.RAISE_OCCUPANCY: (Cause.LOW_THEORETICAL_OCCUPANCY, Cause.LOW_OCCUPANCY),
    Action.MORE_PROGRAMS: (Cause.SMALL_GRID,),
    Action.WHOLE_WAVES: (Cause.TAIL,),
    Action.BALANCE_WORK: (Cause.LOW_OCCUPANCY, Cause.TAIL),
    Action.CUT_INSTRUCTIONS: (Cause.ISSUE_BOUND, Cause.PIPE_BUSY),
    Action.FEWER_BARRIERS: (Cause.STALL,),
    Action.SHARED_PRESSURE: (Cause.STALL, Cause.BANK_CONFLICTS),
}


@dataclass(frozen=True)
class Proposal:
    """A configuration one move away from `origin`, and the step that asked for it."""

    params: dict[str, Any]
    action: str
    cause: str
    move: str  # "num_stages 3 -> 4"
    why: str  # the mapping's words for the action
    origin: str  # the configuration explained
    gain_us: float | None
    stall: str | None = None  # the warp stall the step reads, where it names one ("wait")

    def as_dict(self) -> dict:
        return {
            "action": self.action,
            "cause": self.cause,
            "move": self.move,
            "why": self.why,
            "from": self.origin,
            "gain_us": self.gain_us,
            "stall": self.stall,
        }


def cause_for(action: Action, finding: Finding) -> str:
    causes = [r.cause for r in finding.reasons]
    for c in ANSWERS.get(action, ()):
        if c in causes:
            return str(c)
    return str(causes[0]) if causes else "no_cause_seen"


def propose(
    values: dict[str, tuple], params: dict[str, Any], origin: str, finding: Finding
) -> tuple[list[Proposal], dict[str, str]]:
    """The configurations the finding's steps point to, one move each, in the steps' order; and
    for each step that proposed none, why: it moves no parameter role, or the parameters it moves
    are already at the end of their values (both recorded with the round)."""
    out: list[Proposal] = []
    idle: dict[str, str] = {}
    for step in finding.next:
        mapped = MOVES.get(step.action)
        if mapped is None:
            idle[str(step.action)] = "no tunable parameter"
            continue
        why, moves = mapped
        edges = []
        for want, direction in moves:
            for name in values:
                if role(name) != want:
                    continue
                options = values[name]
                i = options.index(params[name]) + direction
                if not 0 <= i < len(options):
                    edges.append(f"{name} at its {'largest' if direction > 0 else 'smallest'}")
                    continue
                out.append(
                    Proposal(
                        {**params, name: options[i]},
                        str(step.action),
                        cause_for(step.action, finding),
                        f"{name} {params[name]} -> {options[i]}",
                        why,
                        origin,
                        step.detail.get("gain_us"),
                        step.detail.get("stall"),
                    )
                )
        if not any(p.action == str(step.action) for p in out):
            idle[str(step.action)] = ", ".join(edges) or "no tunable of its roles here"
    return out, idle
