"""Per kernel, one verdict per lab variant across the sweep: win, active track or not a win.

Each lab case is compared with every baseline at the same dtype and shape on device time:
profkit.stats.compare_cases gives the ratio of medians with its 95% interval and an outcome
(faster, slower, noise, unstable). The eager-loop time per call (loop_us, schema 2) is compared
apart: where the host's cost decides the loop, the two comparisons can disagree, and both are said.
An interpret run is a correctness run: correct cases without timing are not failures.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from profkit import stats
from profkit.explain.evidence import Evidence, as_bool, num, text, timed, where
from profkit.explain.model import (
    Action,
    Advice,
    BaselineComparison,
    Cause,
    Finding,
    FindingKind,
    Reason,
    Verdict,
)
from profkit.explain.record import LaunchRecord
from profkit.stats.throttle import REASON_SEP


def compare(lab: Mapping, base: Mapping, samples: pd.DataFrame | None) -> BaselineComparison:
    c = stats.compare_cases(lab, base, samples)
    return BaselineComparison(
        dtype=str(lab["dtype"]),
        shape=str(lab["shape"]),
        baseline=str(base["variant"]),
        ratio=c.ratio,
        ci_low=c.ci_low,
        ci_high=c.ci_high,
        outcome=c.outcome,
        method=c.method,
        lab_loop_us=num(lab, "loop_us"),
        baseline_loop_us=num(base, "loop_us"),
        lab_clock_note=text(lab, "clock_note"),
        baseline_clock_note=text(base, "clock_note"),
    )


def loop_outcome(c: BaselineComparison) -> str | None:
    """The eager-loop comparison: faster/slower beyond the practical floor, else noise."""
    if c.lab_loop_us is None or c.baseline_loop_us is None or c.baseline_loop_us <= 0:
        return None
    ratio = c.lab_loop_us / c.baseline_loop_us
    if abs(ratio - 1) * 100 < stats.PRACTICAL_FLOOR_PCT:
        return "noise"
    return "faster" if ratio < 1 else "slower"


def verdicts(
    kernel: str,
    rows: list[dict],
    steps: Mapping[tuple[str, str], list[Advice]],
    samples: pd.DataFrame | None,
    mode: str = "gpu",
    on_device: bool = True,
) -> list[Finding]:
    """One verdict per lab variant; steps maps (variant, "dtype shape") to that case's steps.
    on_device: the comparisons are on device time (False: on step latency, host included)."""
    lab = [r for r in rows if not as_bool(r.get("baseline"))]
    base = [r for r in rows if as_bool(r.get("baseline"))]
    variants = list(dict.fromkeys(str(r["variant"]) for r in lab))
    return [
        _verdict(
            kernel,
            v,
            [r for r in lab if str(r["variant"]) == v],
            base,
            steps,
            samples,
            mode,
            several=len(variants) > 1,
            on_device=on_device,
        )
        for v in variants
    ]


def _verdict(
    kernel: str,
    variant: str,
    lab: list[dict],
    base: list[dict],
    steps: Mapping[tuple[str, str], list[Advice]],
    samples: pd.DataFrame | None,
    mode: str,
    several: bool,
    on_device: bool = True,
) -> Finding:
    ev = Evidence()
    f = Finding(
        subject=f"{kernel} {variant}" if several else kernel,
        kind=FindingKind.VERDICT,
        kernel=kernel,
        variant=variant,
    )
    ev.put("lab_cases", len(lab))
    correct = [r for r in lab if as_bool(r.get("correct"))]
    ev.put("correct_cases", len(correct))
    if mode == "interpret":
        f.verdict = Verdict.CORRECTNESS_ONLY
        failed = [r for r in lab if not as_bool(r.get("correct"))]
        if failed:
            _failed(f, failed, ev, base)
        f.evidence = dict(ev)
        return f
    failed = [r for r in lab if not timed(r)]
    if failed:
        f.verdict = Verdict.NOT_A_WIN
        _failed(f, failed, ev, base)
        f.evidence = dict(ev)
        return f
    comparisons = [
        compare(r, b, samples) for r in lab for b in base if where(b) == where(r) and timed(b)
    ]
    f.comparisons = comparisons
    uncompared = [where(r) for r in lab if where(r) not in {c.where for c in comparisons}]
    if uncompared:
        ev.put("not_compared", ", ".join(uncompared))
    if not comparisons:
        f.verdict = Verdict.NO_BASELINE
        f.evidence = dict(ev)
        return f
    f.tally = {
        b: {o: sum(c.outcome == o for c in comparisons if c.baseline == b) for o in stats.OUTCOMES}
        for b in dict.fromkeys(c.baseline for c in comparisons)
    }
    ev.put("cases_compared", len({c.where for c in comparisons}))
    if any(as_bool(r.get("host_in_window")) for r in lab):
        ev.put("timing_method", "schema-1 events")
    places = list(dict.fromkeys(c.where for c in comparisons))
    if all(c.outcome == "faster" for c in comparisons):
        f.verdict = Verdict.WIN
    elif all(any(c.outcome == "slower" for c in comparisons if c.where == p) for p in places):
        f.verdict = Verdict.NOT_A_WIN
    else:
        f.verdict = Verdict.ACTIVE_TRACK
    losses = sorted((c for c in comparisons if c.outcome == "slower"), key=lambda c: -c.ratio)
    if losses:
        worst = losses[0]
        ev.put("worst_loss_pct", worst.delta_pct)
        ev.put("worst_loss_where", worst.where)
        ev.put("worst_loss_baseline", worst.baseline)
        ev.put("worst_loss_throttled", _throttled_sides(worst, variant))
    wins = sorted((c for c in comparisons if c.outcome == "faster"), key=lambda c: c.ratio)
    if wins:
        ev.put("best_win_x", 1 / wins[0].ratio)
        ev.put("best_win_where", wins[0].where)
        ev.put("best_win_baseline", wins[0].baseline)
        ev.put("best_win_throttled", _throttled_sides(wins[0], variant))
    _sub_floor(comparisons, ev)
    _loop_split(f, comparisons, ev)
    _throttled(f, comparisons, [*lab, *base], ev)
    f.next = _advice(variant, losses, comparisons, steps, on_device)
    f.evidence = dict(ev)
    return f


def _sub_floor(comparisons: list[BaselineComparison], ev: Evidence) -> None:
    """Ties whose interval excludes 1 all on one side: a measurable gap under the practical
    floor. Several of them in one direction is a pattern a tie count would hide."""
    for side, test in (("slower", lambda c: c.ci_low > 1), ("faster", lambda c: c.ci_high < 1)):
        hit = [c for c in comparisons if c.outcome == "noise" and test(c)]
        if hit:
            worst = max(hit, key=lambda c: abs(math.log(c.ratio)))
            ev.put(f"ties_{side}_cases", len(hit))
            ev.put(f"ties_{side}_max_pct", abs(worst.delta_pct))
            ev.put(f"ties_{side}_where", worst.where)
            ev.put(f"ties_{side}_baseline", worst.baseline)


def _throttled_sides(c: BaselineComparison, variant: str) -> list[str] | None:
    """Which sides of a comparison ran throttled (None when neither did)."""
    sides = [who for who, note in ((variant, c.lab_clock_note),
             (c.baseline, c.baseline_clock_note)) if note]  # fmt: skip
    return sides or None


def _throttled(
    f: Finding, comparisons: list[BaselineComparison], rows: list[dict], ev: Evidence
) -> None:
    """How many comparisons, and how many of the wins and losses, rest on a case that ran at
    reduced clocks: those gaps may be the clock, not the code. Runs without clock_note say
    nothing."""
    hit = [c for c in comparisons if c.throttled]
    if not hit:
        return
    decided = [c for c in comparisons if c.outcome in ("faster", "slower")]
    places = {c.where for c in hit}
    slow = [r for r in rows if where(r) in places and as_bool(r.get("clock_throttled"))]
    reasons = [w for r in slow for w in (text(r, "throttle_reasons") or "").split(REASON_SEP) if w]
    clocks = [LaunchRecord.of(r).sm_clock_mhz for r in slow]
    ev.put("throttled_comparisons", len(hit))
    ev.put("comparisons", len(comparisons))
    ev.put("throttled_decided", sum(c.throttled for c in decided))
    ev.put("decided_comparisons", len(decided))
    ev.put("throttle_reasons", ", ".join(dict.fromkeys(reasons)) or None)
    ev.put("min_sm_clock_mhz", min((c for c in clocks if c is not None), default=None))
    keys = ["throttled_comparisons", "comparisons", "throttled_decided", "decided_comparisons"]
    keys += [k for k in ("throttle_reasons", "min_sm_clock_mhz") if k in ev]
    f.reasons.append(Reason(Cause.THROTTLED, keys, {"verdict": True}))


def _failed(f: Finding, failed: list[dict], ev: Evidence, base: list[dict]) -> None:
    ev.put("failed_cases", len(failed))
    # every case of the variant and of every baseline disagrees with the reference: the baselines'
    # code is trusted, so the reference (or make_inputs) is the likelier fault
    wrong = [r for r in base if not as_bool(r.get("correct"))]
    suspect = (
        bool(base)
        and len(wrong) == len(base)
        and all(not as_bool(r.get("correct")) for r in failed)
    )
    first = failed[0]
    ev.put("first_failure", where(first))
    ev.put("first_failure_error", text(first, "error") or "output does not match the reference")
    if num(first, "rel_err") is not None:
        ev.put("first_failure_rel_err", num(first, "rel_err"))
    cause = Cause.INCORRECT if not as_bool(first.get("correct")) else Cause.UNTIMED
    keys = ["failed_cases", "first_failure", "first_failure_error"]
    if suspect:
        ev.put("baseline_failed_cases", len(wrong))
        keys.append("baseline_failed_cases")
    f.reasons = [Reason(cause, keys, {"suspect": "reference"} if suspect else {})]
    detail = {"suspect": "reference"} if suspect else {}
    f.next = [Advice(Action.FIX_CORRECTNESS, ["first_failure"], detail)]


def _loop_split(f: Finding, comparisons: list[BaselineComparison], ev: Evidence) -> None:
    """Where the GPU comparison and the eager-loop comparison disagree, keep the widest such
    case: both are said, apart."""
    split = [
        c
        for c in comparisons
        if loop_outcome(c) in ("faster", "slower")
        and c.outcome in ("faster", "slower")
        and loop_outcome(c) != c.outcome
    ]
    if not split:
        return
    c = max(split, key=lambda c: abs(math.log(c.ratio)))
    ev.put("split_where", c.where)
    ev.put("split_baseline", c.baseline)
    ev.put("split_gpu_ratio_x", 1 / c.ratio if c.ratio < 1 else c.ratio)
    ev.put("split_gpu_outcome", c.outcome)
    ev.put("split_lab_loop_us", c.lab_loop_us)
    ev.put("split_baseline_loop_us", c.baseline_loop_us)
    ev.put("split_cases", len(split))
    f.reasons.append(
        Reason(
            Cause.HOST_BOUND,
            [
                "split_where",
                "split_baseline",
                "split_gpu_ratio_x",
                "split_lab_loop_us",
                "split_baseline_loop_us",
                "split_cases",
            ],
            {"split": True, "variant": f.variant},
        )
    )


def _advice(
    variant: str,
    losses: list[BaselineComparison],
    comparisons: list[BaselineComparison],
    steps: Mapping[tuple[str, str], list[Advice]],
    on_device: bool = True,
) -> list[Advice]:
    """The steps of the cases where it loses, worst loss first; with no loss, those of the case
    closest to losing. Each step says where it comes from. A loss in device time (measured by
    graph replay, the host not in it) is not told to cut the host cost: its CUDA-graph step says
    what reaches device time instead."""
    order = losses or sorted(comparisons, key=lambda c: -c.ratio)[:1]
    out: list[Advice] = []
    for c in order:
        for step in steps.get((variant, c.where), []):
            if all(s.action != step.action for s in out):
                detail = {**step.detail, "where": c.where, "against": c.baseline}
                if not losses:
                    # the closest case, by its own outcome: tied, unstable, or still faster
                    detail["closest"] = c.outcome
                    if c.outcome == "faster":
                        detail["closest_x"] = 1 / c.ratio
                elif on_device and step.action == Action.CUDA_GRAPH:
                    detail["device_loss"] = True
                out.append(Advice(step.action, step.because, detail))
    return out[:4]
