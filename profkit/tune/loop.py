"""The tune loop: capture the shipped configuration with counters, explain it, measure only the
configurations its steps point to, move to the fastest, repeat; store everything as one run.

Each round is a plain capture (capture.run_capture, or a Dask sweep under --cluster) of a spec
whose variants are the round's configurations, stored in a hidden work folder under the run root;
the tune run merges the rounds' tables (launch numbers kept apart, as the cluster merge does) and
adds each configuration's round, the step that proposed it, and the winner. The loop stops when
the configuration explained has no step that clears the practical floor (explain withholds those),
when its steps point only to configurations already measured (or to none of the parameters), or
when the budget is spent. Under --interpret every configuration of the (small) grid is checked,
correctness only: nothing is timed, so nothing can be explained.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
from rich.console import Console

from profkit import store
from profkit.errors import ProfkitError
from profkit.explain import Finding, FindingKind, Report, explain_run
from profkit.spec import KernelSpec, Shape, find_spec, format_shape
from profkit.tune import steps, why
from profkit.tune.space import Space, describe, spec_file

TUNE_FILE = "tune.json"  # the tune run's own record: rounds, steps, winner, why


@dataclass
class TuneOptions:
    dtype: str
    shape: Shape
    root: Path
    budget: int  # configurations measured at most, the shipped one included
    interpret: bool = False
    from_file: str | None = None
    seed: int = 0
    ncu_timeout_s: float = 600.0
    cluster: str | None = None
    workers: int | None = None


@dataclass
class Measured:
    name: str
    params: dict
    round: int
    proposal: steps.Proposal | None  # None: the shipped configuration (round 1)
    seconds: float  # since the tune started, when its round was stored
    run: store.Run | None = field(default=None, repr=False)


def default_budget(space: Space) -> int:
    """A quarter of the grid (at least 2: the shipped configuration and one other)."""
    return max(2, space.size // 4)


def run_tune(
    spec: KernelSpec, space: Space, opts: TuneOptions, console: Console | None = None
) -> Path:
    console = console or Console(stderr=True)
    # the rounds' captures, hidden from the run listing and removed at the end whatever happens;
    # a name of its own, so two tunes under one root never share it
    opts.root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".tune-{space.kernel}-", dir=opts.root))
    started = time.perf_counter()
    measured: dict[str, Measured] = {}
    rounds: list[dict] = []
    try:
        if opts.interpret:
            names = [space.name(p) for p in space.grid()]
            run = _capture(space, names, opts, work, console)
            for n in names:
                measured[n] = Measured(n, space.params(n), 1, None, 0.0, run)
            rounds.append({"round": 1, "configs": names, "why": "interpret: every configuration"})
            stop = "interpret mode: correctness of every configuration, nothing timed"
        else:
            stop = _loop(space, opts, work, console, started, measured, rounds)
        return _store(spec, space, opts, measured, rounds, stop, time.perf_counter() - started)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _loop(
    space: Space,
    opts: TuneOptions,
    work: Path,
    console: Console,
    started: float,
    measured: dict[str, Measured],
    rounds: list[dict],
) -> str:
    """Rounds until one of the stops; fills measured and rounds, returns why it stopped."""
    shipped = space.name(space.shipped)
    todo: list[tuple[str, steps.Proposal | None]] = [(shipped, None)]
    explained: set[str] = set()
    while True:
        r = len(rounds) + 1
        names = [n for n, _ in todo]
        console.print(f"tune round {r}: {', '.join(_label(space, n) for n in names)}")
        run = _capture(space, names, opts, work, console)
        at = time.perf_counter() - started
        for n, proposal in todo:
            measured[n] = Measured(n, space.params(n), r, proposal, at, run)
        entry = {"round": r, "configs": names, "seconds": round(at, 1)}
        rounds.append(entry)
        best = _fastest(measured)
        if best is None:
            return "no configuration measured correct and timed"
        entry["best"] = best.name
        if best.name in explained:
            return f"{best.name}'s steps point only to configurations already measured"
        explained.add(best.name)
        if best.run.timing_only:
            why = best.run.manifest.get("counters", {}).get("reason") or "the counter pass failed"
            return f"{best.name}: no counters to explain ({why})"
        finding = _finding(best)
        if finding is None:
            return f"{best.name}: explain found no case finding with a cause or a step"
        entry["explained"] = best.name
        entry["causes"] = [str(x.cause) for x in finding.reasons]
        entry["steps"] = [
            {"action": str(s.action), "gain_us": s.detail.get("gain_us")} for s in finding.next
        ]
        props, idle = steps.propose(space.values, best.params, best.name, finding)
        entry["steps_not_taken"] = idle
        fresh: dict[str, steps.Proposal] = {}
        for p in props:
            fresh.setdefault(space.name(p.params), p)
        fresh = {n: p for n, p in fresh.items() if n not in measured}
        if not props:
            causes = ", ".join(entry["causes"]) or "no cause"
            held = [s for s in finding.next if s.detail.get("under_floor")]
            if held or not finding.next:
                return f"{best.name} ({causes}): no step clears the practical floor"
            why = "; ".join(f"{a}: {w}" for a, w in idle.items())
            return f"{best.name} ({causes}): no step moves a tunable ({why})"
        if not fresh:
            return f"{best.name}'s steps point only to configurations already measured"
        left = opts.budget - len(measured)
        if left <= 0:
            return f"budget spent ({opts.budget} configurations)"
        todo = list(fresh.items())[:left]


def _label(space: Space, name: str) -> str:
    return f"{name} ({describe(space.params(name))})"


def _capture(
    space: Space, names: list[str], opts: TuneOptions, work: Path, console: Console
) -> store.Run:
    from profkit.capture import CaptureOptions, run_capture

    path = spec_file(work, space, opts.from_file, names)
    spec = find_spec(space.kernel, str(path))
    copts = CaptureOptions(
        dtypes=(opts.dtype,),
        shapes=(opts.shape,),
        variants=tuple(names),
        root=work / "rounds",
        interpret=opts.interpret,
        counters=not opts.interpret,
        from_file=str(path),
        seed=opts.seed,
        ncu_timeout_s=opts.ncu_timeout_s,
    )
    if opts.cluster:
        from profkit.tune.cluster_round import cluster_round

        stored = cluster_round(spec, copts, opts.cluster, opts.workers, console)
    else:
        stored = run_capture(spec, copts, console)
    return store.load(stored)


def _row(m: Measured) -> dict | None:
    rows = m.run.cases[m.run.cases.variant.astype(str) == m.name] if m.run is not None else None
    return None if rows is None or rows.empty else rows.iloc[0].to_dict()


def _ms(m: Measured) -> float | None:
    row = _row(m)
    if row is None or not bool(row.get("correct")):
        return None
    ms = pd.to_numeric(pd.Series([row.get("device_p50_ms")]), errors="coerce").iloc[0]
    return None if pd.isna(ms) else float(ms)


def _fastest(measured: dict[str, Measured]) -> Measured | None:
    timed = [(ms, m.name) for m in measured.values() if (ms := _ms(m)) is not None]
    return measured[min(timed)[1]] if timed else None


def _finding(m: Measured) -> Finding | None:
    """explain's case finding for m, from the round run that measured it (None: no such finding,
    or one with neither a cause nor a step)."""
    report = explain_run(m.run, history_runs=[])
    for f in report.findings:
        if f.kind == FindingKind.CASE and f.variant == m.name:
            return None if not f.reasons and not f.next else f
    return None


def _store(
    spec: KernelSpec,
    space: Space,
    opts: TuneOptions,
    measured: dict[str, Measured],
    rounds: list[dict],
    stop: str,
    wall_s: float,
) -> Path:
    """The tune run: the rounds' tables merged, each configuration's step, the record."""
    from profkit import cluster as _cluster_merge  # the launch-number merge, reused

    runs = {id(m.run): m.run for m in measured.values()}.values()
    cases = pd.concat([r.cases[r.cases.variant.astype(str).isin(measured)] for r in runs])
    kernels = _cluster_merge._offset_launches([r.kernels for r in runs])
    samples = [r.samples for r in runs if r.samples is not None]
    by_name = {m.name: m for m in measured.values()}
    extra = pd.DataFrame(
        [
            {
                "variant": n,
                "round": m.round,
                "params": json.dumps(m.params),
                "action": m.proposal.action if m.proposal else _unproposed(space, n),
                "answers": m.proposal.cause if m.proposal else _unproposed(space, n),
                "move": m.proposal.move if m.proposal else "",
                "proposed_from": m.proposal.origin if m.proposal else "",
                "stall": (m.proposal.stall or "") if m.proposal else "",
                "measured_at_s": round(m.seconds, 1),
            }
            for n, m in by_name.items()
        ]
    )
    # each round's cases are joined with their own counters already: concatenated as they are
    cases = cases.drop(columns=[c for c in extra.columns if c != "variant" and c in cases])
    joined = cases.merge(extra, on="variant", how="left")
    samples_all = pd.concat(samples, ignore_index=True) if samples else pd.DataFrame()
    record = {
        "space": space.as_dict(),
        "shipped": space.name(space.shipped),
        "budget": opts.budget,
        "rounds": rounds,
        "stop": stop,
        "measured": len(measured),
        "wall_s": round(wall_s, 1),
    }
    if not opts.interpret:
        record |= why.winner(space, joined, samples_all)
    first = next(iter(runs))
    writer = store.RunWriter(opts.root, stored_kernel(spec.name))
    try:
        writer.write_table(store.CASES, joined)
        if kernels is not None:
            writer.write_table(store.KERNELS, kernels)
        if not samples_all.empty:
            writer.write_samples(samples_all)
        writer.path(TUNE_FILE).write_text(json.dumps(record, indent=2, default=str) + "\n")
        manifest = {
            "kind": store.TUNE,
            "kernel": stored_kernel(spec.name),
            "tuned_kernel": spec.name,
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "mode": "interpret" if opts.interpret else "gpu",
            "source": spec.source,
            "command": " ".join(["profkit", *sys.argv[1:]]),
            "options": {
                "dtypes": [opts.dtype],
                "shapes": [format_shape(opts.shape)],
                "variants": list(by_name),
                "tuned_variant": space.variant,
                "seed": opts.seed,
                "interpret": opts.interpret,
                "budget": opts.budget,
                "cluster": opts.cluster,
            },
            "timing": first.manifest.get("timing"),
            "fingerprint": first.manifest.get("fingerprint"),
            "ceilings": first.manifest.get("ceilings"),
            "counters": _counters(runs),
            "tune": {k: record[k] for k in ("shipped", "stop", "measured", "wall_s")}
            | {"winner": record.get("winner"), "grid": space.size},
        }
        return writer.finish(manifest)
    except BaseException:
        writer.abandon()
        raise


def _unproposed(space: Space, name: str) -> str:
    """What measured a configuration no step proposed: shipped, or (--interpret) the grid."""
    return "shipped" if name == space.name(space.shipped) else "grid"


def _counters(runs: Iterable[store.Run]) -> dict:
    """The rounds' counter passes: ok when every one was, else the first that was not."""
    blocks = [r.manifest.get("counters", {}) for r in runs]
    failed = [b for b in blocks if b.get("status") != "ok"]
    return {**(failed[0] if failed else {"status": "ok"}), "rounds": blocks}


def stored_kernel(kernel: str) -> str:
    """The name a tune run is stored under: KERNEL.tune, so that the kernel's own name (`profkit
    explain KERNEL`, its history, its dashboard's history) keeps meaning its captures, and
    `profkit explain KERNEL.tune` reads its newest tune run."""
    return f"{kernel}.tune"


def tune_record(run: store.Run) -> dict | None:
    """A tune run's record (tune.json), None for any other run."""
    if run.kind != store.TUNE:
        return None
    try:
        return json.loads((run.path / TUNE_FILE).read_text())
    except (OSError, ValueError) as exc:
        raise ProfkitError(f"{run.path}: {TUNE_FILE} is unreadable ({exc})") from exc


def explain_tune(run: store.Run) -> Report:
    """A tune run's findings: every configuration is the tuned variant, the user's own code (the
    shipped one is its reference, not a library baseline): runs stored while the shipped
    configuration was flagged `baseline` read the same as runs stored since. No verdict against
    a baseline: the path (run_summary) says how each configuration compares with the shipped."""
    report = explain_run(replace(run, cases=run.cases.assign(baseline=False)), history_runs=[])
    report.verdicts = []
    return report
