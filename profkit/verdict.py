"""Per kernel, one verdict per lab variant across the sweep: win, active track or not a win.

Each lab case is timed against every baseline at the same dtype and shape (beyond the timing spread
or a tie); the verdict counts wins and losses per baseline, lists the losses and the widest tie,
sets the largest case's DRAM traffic beside the unfused baselines' (fusion evidence), and groups the
next steps where it loses by the cause the counters show.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from profkit import thresholds as th
from profkit.findings import (
    Finding,
    _count,
    _Evidence,
    _failure,
    _has_counters,
    _num,
    _nums,
    _RunContext,
    _Setting,
    _timed,
    _where,
    as_bool,
)
from profkit.latency_causes import _grid_too_small, _small_grid, _tail_effect, _tail_idle

# --- timing ---------------------------------------------------------------------------------------


def timing_outcome(
    ms: float, ref_ms: float, device_iqr_ms: float | None, ref_spread_ms: float | None
) -> str:
    """Whether ms is "faster" or "slower" than ref_ms beyond the larger spread, else "noise"."""
    spreads = [s for s in (device_iqr_ms, ref_spread_ms) if s is not None and not math.isnan(s)]
    noise = max(spreads, default=0.0) * th.NOISE_SPREAD_MULTIPLE
    delta = ms - ref_ms
    if abs(delta) <= noise:
        return "noise"
    return "faster" if delta < 0 else "slower"


# --- per kernel: the verdict ----------------------------------------------------------------------


@dataclass
class _Comparison:
    dtype: str
    shape: str
    baseline: str
    delta_ms: float  # lab - baseline: negative is faster
    delta_pct: float
    device_iqr_ms: float
    outcome: str  # faster | slower | noise

    @property
    def where(self) -> str:
        return f"{self.dtype} {self.shape}"

    @property
    def key(self) -> str:
        return f"{self.where} vs {self.baseline}"


@dataclass
class _Sweep:
    """What one lab variant's verdict reads: its cases, the baselines', each case's next step."""

    kernel: str
    variant: str
    lab: list[dict]
    base: list[dict]
    steps: dict[tuple[str, str], str | None]
    ctx: _RunContext

    def row(self, variant: str, where: str) -> dict | None:
        rows = self.lab if variant == self.variant else self.base
        return next((r for r in rows if str(r["variant"]) == variant and _where(r) == where), None)


def _compare(lab: Mapping, base: Mapping) -> _Comparison:
    lab_ms, base_ms = _num(lab, "device_p50_ms"), _num(base, "device_p50_ms")
    lab_spread, base_spread = _num(lab, "device_iqr_ms"), _num(base, "device_iqr_ms")
    delta = lab_ms - base_ms
    return _Comparison(
        dtype=str(lab["dtype"]),
        shape=str(lab["shape"]),
        baseline=str(base["variant"]),
        delta_ms=delta,
        delta_pct=delta / base_ms * 100,
        device_iqr_ms=max(lab_spread or 0.0, base_spread or 0.0),
        outcome=timing_outcome(lab_ms, base_ms, lab_spread, base_spread),
    )


def _comparisons(lab_rows: list[dict], base_rows: list[dict], ev: _Evidence) -> list[_Comparison]:
    """Each lab case against each baseline timed at the same dtype and shape; every figure of each
    comparison goes to the evidence, quoted in the text or not."""
    out = []
    for lab in lab_rows:
        for base in base_rows:
            if _where(base) == _where(lab) and _timed(base):
                c = _compare(lab, base)
                ev[f"{c.key}: delta_ms"], ev[f"{c.key}: delta_pct"] = c.delta_ms, c.delta_pct
                ev[f"{c.key}: device_iqr_ms"], ev[f"{c.key}: outcome"] = c.device_iqr_ms, c.outcome
                out.append(c)
    return out


def _margin(ev: _Evidence, c: _Comparison) -> str:
    """A margin quoted as a size; evidence keeps the signed values (lab - baseline)."""
    ms = ev.q_abs(f"{c.key}: delta_ms", c.delta_ms)
    return f"{ms} ({_margin_pct(ev, c)})"


def _margin_pct(ev: _Evidence, c: _Comparison) -> str:
    return ev.q_abs(f"{c.key}: delta_pct", c.delta_pct)


def verdicts(
    kernel: str, rows: list[dict], case_findings: list[Finding], ctx: _RunContext
) -> list[Finding]:
    """One verdict per lab variant of a kernel; case_findings (in row order) give the next steps."""
    lab = [r for r in rows if not as_bool(r.get("baseline"))]
    base = [r for r in rows if as_bool(r.get("baseline"))]
    variants = list(dict.fromkeys(str(r["variant"]) for r in lab))
    # a verdict's next step may come from the counters of a case where it loses
    steps = {
        (str(r["variant"]), _where(r)): f.next_step
        for r, f in zip(rows, case_findings, strict=True)
    }
    sweeps = [
        _Sweep(kernel, v, [r for r in lab if str(r["variant"]) == v], base, steps, ctx)
        for v in variants
    ]
    return [_verdict(sweep, len(variants) > 1) for sweep in sweeps]


def _verdict(sweep: _Sweep, several: bool) -> Finding:
    ev = _Evidence()
    finding = Finding(
        subject=f"{sweep.kernel} {sweep.variant}" if several else sweep.kernel,
        kind="verdict",
        kernel=sweep.kernel,
        variant=sweep.variant,
    )
    failed = [r for r in sweep.lab if not _timed(r)]
    comparisons = [] if failed else _comparisons(sweep.lab, sweep.base, ev)
    if failed:
        finding.verdict, finding.text, finding.next_step = _incorrect_verdict(
            sweep.variant, failed, ev
        )
    elif not comparisons:
        finding.text = (
            f"{sweep.variant} has no baseline timed at the same dtype and shape, so there is no "
            "verdict."
        )
    else:
        finding.verdict, text, finding.next_step = _judge(sweep, comparisons, ev)
        sentences = [text, _uncompared(sweep.lab, comparisons, ev), _fusion_sentence(sweep, ev)]
        finding.text = " ".join(s for s in sentences if s)
    finding.evidence = dict(ev)
    return finding


def _uncompared(lab: list[dict], comparisons: list[_Comparison], ev: _Evidence) -> str:
    """Lab cases with no baseline timed beside them: the verdict says nothing about those."""
    compared = {c.where for c in comparisons}
    missing = [w for w in (_where(r) for r in lab) if w not in compared]
    if not missing:
        return ""
    places = ev.q("not_compared", ", ".join(missing))
    return f"No baseline was timed at {places}, so it is not judged there."


def _incorrect_verdict(variant: str, failed: list[dict], ev: _Evidence) -> tuple[str, str, str]:
    places = [f"at {_where(r)} it is {_failure(r, ev, f'{_where(r)}: ')}" for r in failed]
    text = (
        f"{variant} is not a win: an incorrect variant never counts as fast, and "
        + "; ".join(places)
        + "."
    )
    return "not a win", text, f"fix correctness at {_where(failed[0])} first"


def _judge(
    sweep: _Sweep, comparisons: list[_Comparison], ev: _Evidence
) -> tuple[str, str, str | None]:
    if all(c.outcome == "faster" for c in comparisons):
        return "win", _win_text(sweep, comparisons, ev), None
    places = list(dict.fromkeys(c.where for c in comparisons))
    beaten_everywhere = all(
        any(c.outcome == "slower" for c in comparisons if c.where == p) for p in places
    )
    verdict = "not a win" if beaten_everywhere else "active track"
    losses = [c for c in comparisons if c.outcome == "slower"]
    ties = [c for c in comparisons if c.outcome == "noise"]
    sentences = [
        _headline(sweep, verdict, comparisons, ev),
        _loss_list(losses, ev),
        _tie_sentence(ties, ev),
    ]
    step = _loss_step(sweep, losses, ev) if losses else _next_at(_worst(ties), sweep)
    return verdict, " ".join(s for s in sentences if s), step


def _win_text(sweep: _Sweep, comparisons: list[_Comparison], ev: _Evidence) -> str:
    baselines = _and(list(dict.fromkeys(c.baseline for c in comparisons)))
    n_lab, n_compared = len(sweep.lab), len({c.where for c in comparisons})
    if n_compared == n_lab:
        lead = (
            f"correct and faster than every baseline timed beside it ({baselines}) at "
            f"{_cases(ev, 'cases_compared', n_lab)}"
        )
    else:
        lead = (
            f"correct at {_cases(ev, 'lab_cases', n_lab)} and faster than every baseline timed "
            f"beside it ({baselines}) at {_cases(ev, 'cases_compared', n_compared)} compared"
        )
    ev["cases_compared"] = n_compared
    closest = min(comparisons, key=lambda c: abs(c.delta_pct))
    widest = max(comparisons, key=lambda c: abs(c.delta_pct))
    text = (
        f"{sweep.variant} is a win: {lead}, beyond the timing spread. The smallest margin is "
        f"{_margin(ev, closest)} against {closest.baseline} at {closest.where}"
    )
    if widest is not closest:
        text += f"; the largest {_margin(ev, widest)} against {widest.baseline} at {widest.where}"
    return text + "."


def _headline(sweep: _Sweep, verdict: str, comparisons: list[_Comparison], ev: _Evidence) -> str:
    """The verdict in one sentence: correctness, then each baseline's count of wins and losses,
    baselines it never loses to first."""
    lead = {"active track": "is an active track", "not a win": "is not a win"}[verdict]
    text = f"{sweep.variant} {lead}: correct at {_cases(ev, 'lab_cases', len(sweep.lab))}"
    if verdict == "not a win":
        where = "at every one" if len(sweep.lab) > 1 else "there"
        text += f", but {where} a baseline is faster beyond the timing spread"
    names = list(dict.fromkeys(c.baseline for c in comparisons))
    lost = {c.baseline for c in comparisons if c.outcome == "slower"}
    ordered = [b for b in names if b not in lost] + [b for b in names if b in lost]
    clauses = [
        _baseline_clause(b, [c for c in comparisons if c.baseline == b], ev) for b in ordered
    ]
    return f"{text}; " + "; ".join(clauses) + "."


def _baseline_clause(baseline: str, mine: list[_Comparison], ev: _Evidence) -> str:
    counts = {o: sum(c.outcome == o for c in mine) for o in ("faster", "noise", "slower")}
    for outcome, count in counts.items():  # every count, quoted or not
        ev[f"vs {baseline}: {outcome}"] = count

    def n(outcome: str) -> str:
        return ev.q(f"vs {baseline}: {outcome}", counts[outcome])

    total = ev.q(f"vs {baseline}: compared", len(mine))
    if len(mine) == 1:
        return _single_clause(baseline, mine[0], ev)
    if counts["slower"]:
        worst = _worst([c for c in mine if c.outcome == "slower"])
        text = (
            f"loses to {baseline} at {n('slower')} of {total}, by up to {_margin_pct(ev, worst)} "
            f"(worst: {worst.where})"
        )
        rest = [f"beats it at {n('faster')}"] if counts["faster"] else []
        rest += [f"ties at {n('noise')}"] if counts["noise"] else []
        return ", ".join([text, _and(rest)]) if rest else text
    if counts["faster"] == len(mine):
        return f"beats {baseline} at all {total}"
    if not counts["faster"]:
        return f"ties with {baseline} at all {total}"
    return f"beats {baseline} at {n('faster')} of {total} and ties at {n('noise')}"


def _single_clause(baseline: str, c: _Comparison, ev: _Evidence) -> str:
    if c.outcome == "slower":
        return f"loses to {baseline} by {_margin_pct(ev, c)} (at {c.where})"
    return f"beats {baseline}" if c.outcome == "faster" else f"ties with {baseline}"


def _loss_list(losses: list[_Comparison], ev: _Evidence) -> str:
    """Per baseline, the dtypes and shapes it wins at, each with its margin: one sentence each."""
    sentences = []
    for baseline in dict.fromkeys(c.baseline for c in losses):
        by_dtype: dict[str, list[str]] = {}
        for c in (c for c in losses if c.baseline == baseline):
            by_dtype.setdefault(c.dtype, []).append(f"{c.shape} by {_margin_pct(ev, c)}")
        places = "; ".join(f"{dtype} {', '.join(items)}" for dtype, items in by_dtype.items())
        sentences.append(f"Losses to {baseline}: {places}.")
    return " ".join(sentences)


def _tie_sentence(ties: list[_Comparison], ev: _Evidence) -> str:
    """Ties as a count and the widest one: a gap inside the spread is not shown to be real."""
    if not ties:
        return ""
    widest = max(ties, key=lambda c: abs(c.delta_pct))
    gap = (
        f"{_margin(ev, widest)} {'slower' if widest.delta_ms > 0 else 'faster'} than "
        f"{widest.baseline} at {widest.where}, inside its "
        f"{ev.q(f'{widest.key}: device_iqr_ms', widest.device_iqr_ms)} spread"
    )
    n = ev.q("ties", len(ties))
    if len(ties) == 1:
        return f"1 comparison ties within the timing spread: {gap}."
    return f"{n} comparisons tie within the timing spread; the widest gap among them is {gap}."


def _worst(comparisons: list[_Comparison]) -> _Comparison:
    return max(comparisons, key=lambda c: c.delta_pct)


def _next_at(c: _Comparison, sweep: _Sweep) -> str | None:
    step = sweep.steps.get((sweep.variant, c.where))
    return f"At {c.where}: {step}." if step else None


def _cases(ev: _Evidence, key: str, n: int) -> str:
    """ "all 24 dtype/shapes", or "its only dtype/shape"."""
    return f"all {ev.q(key, n)} dtype/shapes" if n > 1 else "its only dtype/shape"


def _and(items: list[str]) -> str:
    """Join with commas and a final "and": "a", "a and b", "a, b and c"."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


# --- the verdict's evidence on fusion -------------------------------------------------------------


def _representative(rows: list[dict]) -> dict:
    """The lab case whose counters explain the verdict: the largest (most bytes, then slowest)."""
    return max(rows, key=lambda r: (_num(r, "bytes") or 0.0, _num(r, "device_p50_ms") or 0.0))


def _fusion_sentence(sweep: _Sweep, ev: _Evidence) -> str:
    """At the largest case, the lab kernel's DRAM level beside each unfused baseline's kernel
    count and DRAM bytes: what fusing buys."""
    rep = _representative(sweep.lab)
    if sweep.ctx.no_counters or not _has_counters(rep):
        reason = sweep.ctx.no_counters or "no counters were captured for this case"
        return f"Timing only ({ev.q('counters_reason', reason)}): no counters show why."
    where = _where(rep)
    unfused = [b for b in sweep.base if _where(b) == where and (_num(b, "kernel_count") or 0) > 1]
    title = "Fusion" if unfused else "Counters"
    text = f"{title} at {where}, the largest case: {_lab_traffic(rep, ev)}"
    for b in unfused:
        text += f"; unfused {b['variant']} {_unfused_traffic(b, rep, ev)}"
    return text + "."


def _lab_traffic(rep: Mapping, ev: _Evidence) -> str:
    count = _num(rep, "kernel_count")
    if count is None:
        who, verb = str(rep["variant"]), "runs"
    else:
        kernels = f"{ev.q_case(rep, 'kernel_count')} {_count(count, 'kernel')}"
        who, verb = f"{rep['variant']}'s {kernels}", "runs" if count == 1 else "run"
    levels = [
        f"{ev.q_case(rep, col)} of {what}"
        for col, what in (
            ("dram_throughput_pct", "DRAM peak"),
            ("pct_peak_bw", "the measured copy bandwidth"),
        )
        if _num(rep, col) is not None
    ]
    text = f"{who} {verb}"
    if levels:
        text += f" at {levels[0]}" + (f" ({levels[1]})" if len(levels) > 1 else "")
    if _num(rep, "dram_bytes") is not None:
        text += f" and move{'s' if verb == 'runs' else ''} {ev.q_case(rep, 'dram_bytes')} "
        text += "through DRAM"
    return text


def _unfused_traffic(base: Mapping, rep: Mapping, ev: _Evidence) -> str:
    text = f"launches {ev.q_case(base, 'kernel_count')} kernels"
    base_bytes, lab_bytes = _num(base, "dram_bytes"), _num(rep, "dram_bytes")
    if base_bytes is None:
        return text
    if not lab_bytes:
        return f"{text} and moves {ev.q_case(base, 'dram_bytes')} through DRAM"
    key = f"{_where(base)} {base['variant']}: dram_over_{rep['variant']}_x"
    ratio = ev.q(key, base_bytes / lab_bytes)
    return f"{text} and moves {ratio} those bytes ({ev.q_case(base, 'dram_bytes')})"


# --- the verdict's next step: what the counters say where it loses --------------------------------


def _loss_step(sweep: _Sweep, losses: list[_Comparison], ev: _Evidence) -> str | None:
    """Losses grouped by the cause their counters show, worst loss first; one sentence per cause,
    setting the lab case's counters beside the winning baseline's."""
    groups: dict[tuple[str, str | None], list[_Comparison]] = {}
    for c in sorted(losses, key=lambda c: -c.delta_pct):
        cause = _loss_cause(sweep, c)
        own = sweep.steps.get((sweep.variant, c.where)) if cause == "own" else None
        groups.setdefault((cause, own), []).append(c)
    sentences = [
        _cause_sentence(sweep, cause, own, group, ev) for (cause, own), group in groups.items()
    ]
    return " ".join(s for s in sentences if s) or None


def _loss_cause(sweep: _Sweep, c: _Comparison) -> str:
    """traffic | occupancy | small grid | tail | in flight | own (the lab case's own step)."""
    lab, base = sweep.row(sweep.variant, c.where), sweep.row(c.baseline, c.where)
    if base is None or not (_has_counters(lab) and _has_counters(base)):
        return "own"
    lab_bytes, base_bytes = _num(lab, "dram_bytes"), _num(base, "dram_bytes")
    if lab_bytes and base_bytes and lab_bytes / base_bytes >= th.EXCESS_DRAM_BYTES_RATIO:
        return "traffic"
    cols = ("theoretical_occupancy_pct", "achieved_occupancy_pct", "dram_throughput_pct")
    mine, theirs = _nums(lab, *cols), _nums(base, *cols)
    if mine is not None and theirs is not None:
        if mine[0] < theirs[0] and mine[1] < theirs[1] - th.OCCUPANCY_GAP_PCT:
            return "occupancy"
    setting = _Setting(sm_count=sweep.ctx.sm_count)
    for name, costly in (("small grid", _grid_too_small), ("tail", _tail_cost)):
        if costly(lab, setting) and not costly(base, setting):
            return name
    if mine is not None and theirs is not None:
        if mine[1] >= theirs[1] - th.OCCUPANCY_GAP_PCT and mine[2] < theirs[2]:
            return "in flight"
    return "own"


def _tail_cost(row: Mapping, _s: _Setting) -> bool:
    return _tail_idle(row) is not None


def _cause_sentence(
    sweep: _Sweep, cause: str, own: str | None, group: list[_Comparison], ev: _Evidence
) -> str:
    worst = group[0]
    lab, base = sweep.row(sweep.variant, worst.where), sweep.row(worst.baseline, worst.where)
    also = [
        c.where + ("" if c.baseline == worst.baseline else f" against {c.baseline}")
        for c in group[1:]
    ]
    lead = f"At {worst.where} against {worst.baseline}"
    lead += f" (also {', '.join(also)})" if also else ""
    if cause == "own":
        return f"{lead}: {own}." if own else ""
    if cause in _LAUNCH_CAUSES:
        local = _Evidence()  # the case's figures, filed under its name as the verdict's others
        said = _LAUNCH_CAUSES[cause](lab, local, _Setting(sm_count=sweep.ctx.sm_count))
        ev.update({f"{worst.where} {sweep.variant}: {k}": v for k, v in local.items()})
        lower = said.text[0].lower() + said.text[1:].rstrip(".")
        return f"{lead}: {lower}, a cost {worst.baseline}'s launch does not have: {said.step}."
    return f"{lead}: {_CAUSE_TEXT[cause](sweep.variant, lab, base, ev)}."


def _traffic_text(variant: str, lab: Mapping, base: Mapping, ev: _Evidence) -> str:
    ratio = _num(lab, "dram_bytes") / _num(base, "dram_bytes")
    key = f"{_where(lab)} {variant}: dram_over_{base['variant']}_x"
    return (
        f"it moves {ev.q(key, ratio)} the DRAM bytes of {base['variant']} "
        f"({ev.q_case(lab, 'dram_bytes')} against {ev.q_case(base, 'dram_bytes')}): remove the "
        "extra passes over the data"
    )


def _occupancy_text(variant: str, lab: Mapping, base: Mapping, ev: _Evidence) -> str:
    b = base["variant"]
    text = (
        f"{_launches(lab, base, ev)}{variant}'s theoretical occupancy is "
        f"{ev.q_case(lab, 'theoretical_occupancy_pct')}"
        f"{_case_registers(lab, ev)} ({ev.q_case(lab, 'achieved_occupancy_pct')} achieved) "
        f"against {b}'s {ev.q_case(base, 'theoretical_occupancy_pct')}{_case_registers(base, ev)} "
        f"({ev.q_case(base, 'achieved_occupancy_pct')} achieved), so it keeps fewer warps, and "
        "fewer loads, in flight"
    )
    regs = _num(lab, "registers_per_thread"), _num(base, "registers_per_thread")
    if None not in regs and regs[0] > regs[1]:
        return text + (
            ": cut registers per thread (fewer values live per thread: more threads per block, "
            "or a loop over the data in chunks)"
        )
    return text + ": ncu's Occupancy section names what caps it (shared memory, block size)"


def _case_registers(row: Mapping, ev: _Evidence) -> str:
    if _num(row, "registers_per_thread") is None:
        return ""
    return f" at {ev.q_case(row, 'registers_per_thread')} registers per thread"


def _in_flight_text(variant: str, lab: Mapping, base: Mapping, ev: _Evidence) -> str:
    b = base["variant"]
    base_regs = ""
    if _num(base, "registers_per_thread") is not None:
        base_regs = f" at {ev.q_case(base, 'registers_per_thread')}"
    return (
        f"occupancy is not the limiter: {_launches(lab, base, ev)}{variant} holds "
        f"{ev.q_case(lab, 'achieved_occupancy_pct')} achieved occupancy "
        f"({ev.q_case(lab, 'theoretical_occupancy_pct')} theoretical{_case_registers(lab, ev)}) "
        f"against {b}'s {ev.q_case(base, 'achieved_occupancy_pct')} "
        f"({ev.q_case(base, 'theoretical_occupancy_pct')}{base_regs}), yet its DRAM runs at "
        f"{ev.q_case(lab, 'dram_throughput_pct')} of peak against "
        f"{ev.q_case(base, 'dram_throughput_pct')}; inspect the SASS for load width (128-bit "
        "LDG.E.128 or narrower) and for how many loads each thread keeps in flight "
        "(memory-level parallelism); more warps will not help"
    )


def _launches(lab: Mapping, base: Mapping, ev: _Evidence) -> str:
    """The two launch shapes side by side, or that they are the same."""
    cols = ("grid_size", "block_size")
    if _nums(lab, *cols) is None or _nums(base, *cols) is None:
        return ""
    grid, block = ev.q_case(lab, "grid_size"), ev.q_case(lab, "block_size")
    if _nums(lab, *cols) == _nums(base, *cols):
        return f"with the same launch as {base['variant']} ({grid} blocks of {block} threads), "
    return (
        f"with {grid} blocks of {block} threads against {base['variant']}'s "
        f"{ev.q_case(base, 'grid_size')} of {ev.q_case(base, 'block_size')}, "
    )


_LAUNCH_CAUSES = {"small grid": _small_grid, "tail": _tail_effect}
_CAUSE_TEXT: dict[str, Callable[[str, Mapping, Mapping, _Evidence], str]] = {
    "traffic": _traffic_text,
    "occupancy": _occupancy_text,
    "in flight": _in_flight_text,
}
