"""The kernel's earlier runs: what changed between versions, and which steps were tried without
effect (so they are not advised again).

Earlier runs are those under the same profiles folder holding the same kernel, created before this
one (or the runs passed with --history). A change of occupancy by OCCUPANCY_GAP_PCT points or more
with device time within NO_EFFECT_TIME_PCT (or a noise outcome) rules out "raise occupancy" for
that variant. The lab notebook's machine-readable list (kernels/ruled_out.json) adds steps ruled
out by other means (the SASS showed the loads already 128-bit wide).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from profkit import stats
from profkit import thresholds as th
from profkit.errors import ProfkitError
from profkit.explain.decode_iterations import as_timed_frame
from profkit.explain.evidence import Evidence, as_bool, timed, where
from profkit.explain.model import Action, Finding, FindingKind
from profkit.explain.record import LaunchRecord
from profkit.store import Run, is_run, load

RULED_OUT_FILE = "ruled_out.json"


def earlier_runs(run: Run, loaded: Sequence[Run] = ()) -> list[Run]:
    """Runs of the same kernel stored beside this one and created before it, newest first; one
    already in memory (loaded, e.g. the dashboard's history) is not read again. A damaged one is
    left out, with a line in run.warnings: another run's damage never stops this run's explain."""
    root = run.path.parent
    if not root.is_dir():
        return []
    # a field of the wrong type in any manifest (`"created": 12345`) compares as text, as
    # store.list_runs reads it: another run's bad field never stops this run's explain
    mine = str(run.manifest.get("created", ""))
    kernel = run.manifest.get("kernel")
    found = []
    for path in root.iterdir():
        if path == run.path or path.name.startswith(".") or not is_run(path):
            continue
        try:
            manifest = json.loads((path / "manifest.json").read_text())
        except (OSError, ValueError):
            continue
        created = str(manifest.get("created", ""))
        if manifest.get("kernel") == kernel and created < mine:
            found.append((created, path))
    known = {r.path.resolve(): r for r in loaded}
    runs = []
    for _, path in sorted(found, reverse=True):
        try:
            runs.append(known.get(path.resolve()) or load(path))
        except ProfkitError as exc:
            said = f"left out of the history: {exc}"
            if said not in run.warnings:
                run.warnings.append(said)
    return runs


def notebook_ruled_out(kernel: str, folder: Path | None) -> dict[str, dict[Action, str]]:
    """variant ("*" for all) -> action -> why, from kernels/ruled_out.json."""
    if folder is None:
        return {}
    path = folder / RULED_OUT_FILE
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    out: dict[str, dict[Action, str]] = {}
    for entry in data.get(kernel, []):
        try:
            action = Action(entry["action"])
        except (KeyError, ValueError):
            continue
        out.setdefault(entry.get("variant", "*"), {})[action] = entry.get("why", RULED_OUT_FILE)
    return out


def _pairs(now: pd.DataFrame, before: pd.DataFrame, variant: str) -> list[tuple[dict, dict]]:
    a = {where(r): r for r in before[before["variant"].astype(str) == variant].to_dict("records")}
    return [
        (a[where(r)], r)
        for r in now[now["variant"].astype(str) == variant].to_dict("records")
        if where(r) in a and timed(r) and timed(a[where(r)])
    ]


def history_finding(
    run: Run, previous: Run, variant: str
) -> tuple[Finding | None, dict[Action, str]]:
    """What changed for one lab variant against the previous run, and the steps it rules out."""
    # step-latency runs are compared on step latency (explain.decode_iterations.as_timed_frame)
    now, before = (as_timed_frame(r).astype({"variant": str}) for r in (run, previous))
    pairs = _pairs(now, before, variant)
    if not pairs:
        return None, {}
    ev = Evidence()
    ev.put("previous_run", previous.run_id)
    ev.put("cases_compared", len(pairs))
    ratios, changes = [], []
    no_effect = None
    records = [(LaunchRecord.of(b), LaunchRecord.of(n)) for b, n in pairs]
    for (before, now), (rec_before, rec_now) in zip(pairs, records, strict=True):
        cmp = stats.compare_cases(now, before, run.samples, previous.samples)
        ratios.append(cmp.ratio)
        changes.append(cmp.outcome)
        occ = (rec_before.achieved_occupancy_pct, rec_now.achieved_occupancy_pct)
        if None in occ:
            continue
        moved = abs(occ[1] - occ[0]) >= th.OCCUPANCY_GAP_PCT
        still = cmp.outcome == "noise" or abs(cmp.delta_pct) < th.NO_EFFECT_TIME_PCT
        if moved and still and occ[1] > occ[0]:
            gain = occ[1] - occ[0]
            if no_effect is None or gain > no_effect[0]:
                no_effect = (gain, occ, now, cmp)
    ev.put("median_time_ratio_x", float(pd.Series(ratios).median()))
    for outcome in stats.OUTCOMES:
        ev.put(f"cases_{outcome}", sum(o == outcome for o in changes))
    for name in ("registers_per_thread", "achieved_occupancy_pct", "dram_pct"):
        deltas = [
            getattr(n, name) - getattr(b, name)
            for b, n in records
            if getattr(n, name) is not None and getattr(b, name) is not None
        ]
        if deltas:
            ev.put(f"median_change_{LaunchRecord.column(name)}", float(pd.Series(deltas).median()))
    ruled: dict[Action, str] = {}
    if no_effect is not None:
        _, occ, now, cmp = no_effect
        ev.put("tried_where", where(now))
        ev.put("occupancy_before_pct", occ[0])
        ev.put("occupancy_after_pct", occ[1])
        ev.put("time_change_pct", cmp.delta_pct)
        ev.put("time_outcome", cmp.outcome)
        ruled[Action.RAISE_OCCUPANCY] = (
            f"{previous.run_id} -> {run.run_id}: occupancy "
            f"{ev['occupancy_before_pct']:.1f}% -> {ev['occupancy_after_pct']:.1f}% at "
            f"{ev['tried_where']}, time {cmp.outcome} ({cmp.delta_pct:+.1f}%)"
        )
    finding = Finding(
        subject=f"{run.manifest.get('kernel', '')} {variant} since {previous.run_id}",
        kind=FindingKind.HISTORY,
        kernel=str(run.manifest.get("kernel", "")),
        variant=variant,
        evidence=dict(ev),
        ruled_out=[{"action": str(a), "why": w} for a, w in ruled.items()],
    )
    return finding, ruled


def lab_variants(cases: pd.DataFrame) -> list[str]:
    lab = cases[~cases["baseline"].map(as_bool)] if "baseline" in cases else cases
    return list(dict.fromkeys(lab["variant"].astype(str)))


def merge(*maps: Mapping[Action, str]) -> dict[Action, str]:
    out: dict[Action, str] = {}
    for m in maps:
        out.update(m)
    return out


def history_runs(run: Run, given: Sequence[Run] | None, loaded: Sequence[Run] = ()) -> list[Run]:
    return list(given) if given is not None else earlier_runs(run, loaded)
