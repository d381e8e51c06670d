"""The winner against the shipped configuration: the 95% interval of their ratio of medians
(profkit.stats, the verdicts' own test), and why it wins, from the counters that changed.

A configuration wins only where the interval says "faster" (excludes 1 and clears the practical
floor); a faster median that does not is a tie, and the shipped configuration stays. The counters
quoted are those that moved by explain's own margins: stall shares by STALL_SHARED_POINTS,
occupancy and throughput by OCCUPANCY_GAP_PCT points, counts by SIBLING_LAUNCH_RATIO. Those that
moved with the win come first (a stall named by a step, then the causes the winner's steps
answered), then what the move did to the launch (a mechanism per parameter role), and last, as
"also", those that moved against it (a stall's share rises when the others fall: shares are not
counts).
"""

from __future__ import annotations

import json
import math

import pandas as pd

from profkit import stats
from profkit import thresholds as th
from profkit.tune.space import Space, describe

# column -> (words, kind, the direction that goes with a faster kernel: -1 down, +1 up, 0 either):
# "stall" shares and "pct" figures move by points, "count"s by a ratio
COUNTERS = {
    "stall_long_scoreboard_pct": ("long-scoreboard stalls", "stall", -1),
    "stall_barrier_pct": ("barrier stalls", "stall", -1),
    "stall_short_scoreboard_pct": ("short-scoreboard stalls", "stall", -1),
    "stall_mio_throttle_pct": ("MIO-throttle stalls", "stall", -1),
    "stall_wait_pct": ("fixed-latency wait stalls", "stall", -1),
    "stall_math_pipe_throttle_pct": ("math-pipe-throttle stalls", "stall", -1),
    "stall_lg_throttle_pct": ("LG-throttle stalls", "stall", -1),
    "achieved_occupancy_pct": ("achieved occupancy", "pct", +1),
    "theoretical_occupancy_pct": ("theoretical occupancy", "pct", +1),
    "dram_throughput_pct": ("DRAM throughput", "pct", +1),
    "tensor_pipe_pct": ("Tensor pipe", "pct", +1),
    "registers_per_thread": ("registers per thread", "count", -1),
    "inst_executed": ("instructions", "count", -1),
    "grid_size": ("programs", "count", 0),
    "block_size": ("threads per program", "count", 0),
    "shared_mem_dynamic_bytes": ("shared memory per program", "count", 0),
}
# the counters each cause is read from: quoted first when the winner's path answered it
CAUSE_COUNTERS = {
    "memory_latency": ("stall_long_scoreboard_pct", "dram_throughput_pct"),
    "stall": ("stall_long_scoreboard_pct", "stall_barrier_pct", "stall_short_scoreboard_pct"),
    "short_of_roof": ("dram_throughput_pct", "stall_long_scoreboard_pct"),
    "register_spills": ("registers_per_thread",),
    "low_occupancy": ("achieved_occupancy_pct", "registers_per_thread"),
    "low_theoretical_occupancy": ("theoretical_occupancy_pct", "registers_per_thread"),
    "small_grid": ("grid_size",),
    "tail": ("grid_size",),
    "tensor_underfed": ("tensor_pipe_pct", "stall_long_scoreboard_pct", "stall_barrier_pct"),
    "issue_bound": ("inst_executed",),
}
QUOTED = 3  # counters quoted with the win
ALSO = 2  # counters quoted as moving against it


def _num(row: pd.Series, col: str) -> float | None:
    value = pd.to_numeric(pd.Series([row.get(col)]), errors="coerce").iloc[0]
    return None if pd.isna(value) else float(value)


def changed(winner: pd.Series, shipped: pd.Series, causes: list[str]) -> list[dict]:
    """The counters that moved from shipped to winner by explain's margins, causes' first."""
    out = []
    for col, (words, kind, good) in COUNTERS.items():
        a, b = _num(shipped, col), _num(winner, col)
        if a is None or b is None:
            continue
        if kind == "count":
            if a <= 0 or b <= 0 or max(a / b, b / a) < th.SIBLING_LAUNCH_RATIO:
                continue
            size = math.log(max(a / b, b / a))
        else:
            margin = th.STALL_SHARED_POINTS if kind == "stall" else th.OCCUPANCY_GAP_PCT
            if abs(b - a) < margin:
                continue
            size = abs(b - a) / 100
        # with the win (a launch fact counts as with it), or against it: a share of stalls can
        # rise only because the others fell
        along = good == 0 or (b - a) * good > 0
        out.append(
            {
                "counter": col,
                "words": words,
                "kind": kind,
                "shipped": a,
                "winner": b,
                "size": size,
                "along": along,
                "fact": good == 0,  # what the launch is, not how it ran
            }
        )
    # a stall a step named ("stall_wait_pct") first, then the counters of the causes answered
    first: list[str] = []
    for c in causes:
        first += [c] if c.startswith("stall_") else list(CAUSE_COUNTERS.get(c, ()))
    out.sort(
        key=lambda c: (
            not c["along"],
            c["counter"] not in first,
            first.index(c["counter"]) if c["counter"] in first else 0,
            -c["size"],
        )
    )
    return out


def phrase(c: dict) -> str:
    a, b = c["shipped"], c["winner"]
    if c["counter"].endswith("_bytes"):
        return f"{c['words']} {a / 1024:.0f} KB -> {b / 1024:.0f} KB"
    if c["kind"] == "count":
        more = "more" if b > a else "fewer"
        return f"{max(a / b, b / a):.1f}x {more} {c['words']} ({a:.4g} -> {b:.4g})"
    unit = "% of stalls" if c["kind"] == "stall" else "%"
    return f"{c['words']} {a:.0f}{unit} -> {b:.0f}{unit}"


def mechanism(name: str, before: object, after: object) -> str:
    """What a one-parameter move does to the launch, in a kernel engineer's words."""
    from profkit.tune.steps import DEPTH, SPLIT, STAGES, TILE, WARPS, role

    r, up = role(name), isinstance(before, int | float) and after > before  # type: ignore[operator]
    if r == STAGES and isinstance(after, int):
        return f"{after} stages keep {after - 1} tiles' loads in flight ahead of the math"
    if r == WARPS:
        more = "spread a program's values over more threads" if up else "give each thread more"
        return f"{after} warps {more}" + ("" if up else " independent work")
    if r == TILE:
        return f"{name} {after}: " + ("more work per program" if up else "more, smaller programs")
    if r == DEPTH:
        return f"{name} {after}: " + ("a wider K step per load" if up else "a narrower K step")
    if r == SPLIT:
        return f"{name} {after}: K split over more programs"
    return f"{name} {after}"


def _text(value: object) -> str:
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


def path(cases: pd.DataFrame, name: str) -> list[pd.Series]:
    """The chain of configurations from the shipped one to name, by the step that proposed each."""
    by = {str(r["variant"]): r for _, r in cases.iterrows()}
    chain = []
    while name in by and name not in [str(r["variant"]) for r in chain]:
        chain.append(by[name])
        name = str(by[name].get("proposed_from") or "")
    return chain[::-1]


def winner(space: Space, cases: pd.DataFrame, samples: pd.DataFrame) -> dict:
    shipped = space.name(space.shipped)
    correct = cases[cases.correct.astype(bool)].copy()
    correct["ms"] = pd.to_numeric(correct["device_p50_ms"], errors="coerce")
    correct = correct.dropna(subset=["ms"])
    if correct.empty:
        return {"winner": None, "why": "no configuration was correct and timed"}
    best = correct.loc[correct["ms"].idxmin()]
    if shipped not in set(correct.variant.astype(str)):
        return {
            "winner": str(best.variant),
            "best": str(best.variant),
            "why": "the shipped configuration was not correct and timed: no comparison",
        }
    base = correct[correct.variant.astype(str) == shipped].iloc[0]
    out: dict = {"best": str(best.variant), "best_ms": float(best.ms), "shipped_ms": float(base.ms)}
    # every configuration against the shipped one: the interval the verdicts use
    ratios = {
        str(r.variant): stats.compare_samples(
            stats.case_samples(samples, str(r.case)), stats.case_samples(samples, str(base.case))
        )
        for _, r in correct.iterrows()
        if str(r.variant) != shipped
    }
    out["vs_shipped"] = {name: r.as_dict() for name, r in ratios.items()}
    if str(best.variant) == shipped:
        out.update(
            winner=shipped,
            shipped_is_best=True,
            why=f"the shipped configuration ({describe(space.shipped)}) is the fastest "
            "measured: no step's configuration beat it",
        )
        return out
    ratio = ratios[str(best.variant)]
    out["against_shipped"] = ratio.as_dict()
    if ratio.outcome != "faster":
        out.update(
            winner=shipped,
            shipped_is_best=True,
            why=f"{best.variant} ({describe(json.loads(best.params))}) is not measurably "
            f"faster than the shipped configuration ({ratio.outcome}: ratio "
            f"{ratio.ratio:.3f}, 95% CI {ratio.ci_low:.3f}-{ratio.ci_high:.3f}): it stays",
        )
        return out
    chain = path(cases, str(best.variant))
    causes = [f"stall_{r.get('stall')}_pct" for r in chain if _text(r.get("stall"))]
    causes += [str(r.get("answers")) for r in chain if str(r.get("answers")) != "shipped"]
    moves = [f"{r.get('move')} ({r.get('action')} for {r.get('answers')})" for r in chain
             if _text(r.get("move"))]  # fmt: skip
    moved = changed(best, base, causes)
    along = [phrase(c) for c in moved if c["along"] and not c["fact"]][:QUOTED]
    facts = [phrase(c) for c in moved if c["fact"]]
    against = [phrase(c) for c in moved if not c["along"]][:ALSO]
    how = [
        mechanism(k, space.shipped[k], v)
        for k, v in json.loads(best.params).items()
        if v != space.shipped[k]
    ]
    said = "; ".join(along) or "no counter moved with it by explain's margins"
    said += f": {', '.join(how)}" if how else ""
    said += f" ({'; '.join(facts)})" if facts else ""
    said += f" (also: {'; '.join(against)})" if against else ""
    speed = 1 / ratio.ratio
    out.update(
        winner=str(best.variant),
        shipped_is_best=False,
        path=[str(r["variant"]) for r in chain],
        counters=moved,
        why=f"{best.variant} ({describe(json.loads(best.params))}) is {speed:.2f}x faster than "
        f"the shipped configuration (95% CI {1 / ratio.ci_high:.3f}-{1 / ratio.ci_low:.3f}x): "
        f"{said}. Steps taken: {', '.join(moves)}",
    )
    return out
