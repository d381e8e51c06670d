"""`profkit profile -- COMMAND...`: the timing pass, the counter pass, the join, the stored run.

The run is stored like a capture's (cases.csv one row per kernel group, samples.csv.gz one sample
per launch, kernels.csv and rules.csv from ncu), with manifest "kind": "profile", so show,
explain, compare and dashboard read it. The program's failure keeps what was measured, marked in
the manifest ("program.exit_status"); any other failure, and Ctrl-C, leave no run.
"""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
from rich.console import Console

from profkit import store
from profkit.counters import ncu
from profkit.errors import ProfkitError
from profkit.textsafe import cut_middle
from profkit.workload import counter_pass, pace, timing_pass
from profkit.workload.child import STOPPED
from profkit.workload.program import Program, child_env

EXPORT = store.PROFILE_EXPORT  # the child's export, kept in the run: every figure traces to it
STDERR_TAIL_LINES = 20
TAIL_LINE_CHARS = 160  # a stderr line quoted in an error: a 5000-character message is cut
# torch.profiler's (Kineto's) own lines on the program's stderr, at every start and stop: not the
# program's words, so never the stderr a failure is told by
_PROFILER_NOISE = re.compile(r"USDT:.*\.cpp:\d+\] ")
GATE = "gate.json"  # the counter pass's op calls (counter_pass.write_gate)


@dataclass
class ProfileOptions:
    root: Path
    top: int = 10
    kernel_regex: str | None = None
    range_name: str | None = None
    launch_skip: int = 0
    launch_count: int = 1
    steps: int | None = None
    step_range: str | None = None
    group_by: str = "range"
    counters: bool = True
    source: bool = False  # after the counter pass, the source pass over the same launches
    pace: bool = True  # with a step range: the pace pass (the step's period without the profiler)
    emit_nvtx: bool = False  # the counter pass under emit_nvtx: ncu's report names each op range
    run_to_end: bool = False  # the counter pass lets the program finish after its last gated call
    ncu_timeout_s: float = 1800.0


@dataclass
class Outcome:
    path: Path
    exit_status: int  # the program's, in the timing pass


def run_profile(program: Program, opts: ProfileOptions, console: Console | None = None) -> Outcome:
    console = console or Console(stderr=True)
    try:
        writer = store.RunWriter(opts.root, program.name)
    except OSError as exc:
        raise ProfkitError(f"cannot store a run under {opts.root}: {exc}") from exc
    try:
        return _profile(program, opts, writer, console)
    except BaseException:
        writer.abandon()  # failed or interrupted: leave nothing that looks like a run
        raise


def _profile(program: Program, opts: ProfileOptions, writer: store.RunWriter, console) -> Outcome:
    from profkit import hostenv
    from profkit.counters.join import aggregate_cases, join

    export_path = writer.path(EXPORT)
    console.print(f"timing pass: {' '.join(program.argv)} under torch.profiler ...")
    status, wall_s, tail = run_child(program.child_argv(export_path))
    if not export_path.is_file():
        how = f"was killed by signal {-status}" if status < 0 else f"exited with status {status}"
        raise ProfkitError(
            f"the program {how} before the timing pass could export anything{_tail_text(tail)}"
        )
    export = timing_pass.read_export(export_path)
    status = int(export.get("exit_status", status))
    acts, ranges = timing_pass.frames(export)
    if status != 0 and not (acts["kind"] == "kernel").any():
        raise ProfkitError(
            f"the program exited with status {status} and launched no CUDA kernel: nothing to "
            f"store{_tail_text(tail)}"
        )
    region = timing_pass.measure_region(
        acts, ranges, step_range=opts.step_range, steps=opts.steps, group_by=opts.group_by
    )
    table, samples = timing_pass.groups(region, program.name)
    for note in region.notes:
        console.print(f"[yellow]note:[/] {note}")
    _say_region(console, region, opts)
    paced = _pace(program, opts, writer, console, region, status)
    counters: dict = {"status": "skipped", "reason": "--no-counters: timing only"}
    kernels = None
    if not opts.counters and (opts.range_name or opts.kernel_regex):
        counter_pass.select(  # the filters name what there is even when nothing is profiled
            acts, region, table, kernel_regex=opts.kernel_regex, range_name=opts.range_name
        )
    if opts.counters and status != 0:
        counters = {"status": "skipped", "reason": f"the program exited with status {status}"}
    elif opts.counters:
        ops = timing_pass.op_calls(export)
        alone = (paced or {}).get("child_wall_s")
        counters, kernels = _counters(
            program, opts, writer, console, acts, region, table, ops, alone
        )
    joined = join(table, aggregate_cases(kernels) if kernels is not None else None)
    writer.write_table(store.CASES, joined)
    writer.write_samples(samples)
    manifest = {
        "kind": store.PROFILE,
        "kernel": program.name,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "mode": "gpu",
        "command": " ".join(["profkit", *sys.argv[1:]]),
        "program": {
            "argv": list(program.argv),
            "exit_status": status,
            "stderr_tail": tail if status != 0 else [],
            "wall_s": export.get("wall_s"),
        },
        "options": {
            "top": opts.top,
            "kernel_regex": opts.kernel_regex,
            "range": opts.range_name,
            "launch_skip": opts.launch_skip,
            "launch_count": opts.launch_count,
            "steps": opts.steps,
            "step_range": opts.step_range,
            "group_by": opts.group_by,
            "source": opts.source,
            "emit_nvtx": opts.emit_nvtx,
        },
        "timing": {"method": timing_pass.METHOD, "wall_s": round(wall_s, 3)},
        "region": region.to_manifest(),
        **({"pace": paced} if paced is not None else {}),
        "fingerprint": hostenv.fingerprint(),
        "ceilings": {},
        "counters": counters,
    }
    path = writer.finish(manifest)
    if status != 0:
        console.print(
            f"[red]the program exited with status {status}[/]: what was measured is kept in "
            f"{path.name}, marked{_tail_text(tail)}"
        )
    return Outcome(path, status)


def _say_region(console: Console, region: timing_pass.Region, opts: ProfileOptions) -> None:
    if opts.step_range is None:
        where = "the whole program (one region: no --step-range)"
    else:
        where = (
            f"{region.steps_measured} step(s) of {opts.step_range!r} "
            f"({region.steps_skipped} warm-up step(s) of {region.steps_seen} left out)"
        )
    console.print(
        f"timing pass: {len(region.launches)} kernel launches over {where}: "
        f"{region.kernel_ms:.3f} ms of kernels in a {region.span_ms:.3f} ms GPU span, "
        f"GPU idle {region.host_gap_pct:.1f}% of it"
    )


def _pace(program, opts, writer, console, region, status) -> dict | None:
    """The pace pass where steps are measured: the program once more, without the profiler."""
    if opts.step_range is None or not opts.pace:
        return None if opts.step_range is None else {"status": "skipped", "reason": "--no-pace"}
    if status != 0:
        return {"status": "skipped", "reason": f"the program exited with status {status}"}
    console.print("pace pass: the program again, without the profiler ...")
    path = writer.path(pace.FILE)
    _, wall_s, _ = run_child(program.pace_argv(path, opts.step_range))
    block = pace.measure(path, region)
    if block["status"] == "ok":
        console.print(
            f"pace pass: a step takes {block['period_ms']:.3f} ms without the profiler, "
            f"{block['profiled_period_ms']:.3f} ms under it: the GPU is idle "
            f"{block['gpu_idle_pct']:.1f}% of a step"
        )
    else:
        console.print(f"[yellow]note:[/] pace pass: {block['reason']}")
    return {**block, "child_wall_s": round(wall_s, 3)}


def _counters(program, opts, writer, console, acts, region, table, ops, alone):
    """The counter pass; alone: the program's plain run time (the pace pass), to say the pass's
    cost against it."""
    from profkit.counters.ncu_rep import read_report

    selection, notes = counter_pass.select(
        acts,
        region,
        table,
        top=opts.top,
        kernel_regex=opts.kernel_regex,
        range_name=opts.range_name,
        launch_skip=opts.launch_skip,
        launch_count=opts.launch_count,
        step_range=opts.step_range,
        ops=ops,
    )
    for note in notes:
        console.print(f"[yellow]note:[/] {note}")
    gate = _gate_file(selection, writer, stop=not opts.run_to_end)
    used = len(selection.chosen)
    if gate is not None:
        how = f"{selection.count} launch(es) for the {used} chosen, each inside its op call"
        if not opts.run_to_end:
            how += ", then the program is stopped"
    else:
        how = (
            f"launches {selection.skip}..{selection.skip + selection.count - 1} of those named, "
            f"{selection.count} for the {used} chosen"
        )
    console.print(f"counter pass: ncu on the top {len(selection.cases)} kernel group(s), {how} ...")
    with console.status("ncu is profiling ..."):
        argv = program.child_argv(None, opts.emit_nvtx, selection.start, gate)
        result = counter_pass.run(selection, argv, writer, timeout_s=opts.ncu_timeout_s)
    block = result.to_manifest()
    log = result.log_path.read_text(errors="replace") if result.log_path else ""
    block.update(
        groups=list(selection.cases),
        launch_skip=selection.skip,
        launch_count=selection.count,
        kernel_names=list(selection.names),
        selection="gate" if gate is not None else "window",
        gate_calls=[list(g) for g in selection.gate or ()],
        launches_expected=selection.count,
        launches_used=used,
        passes=counter_pass.passes(log),
        program_stopped=STOPPED in log,
        notes=notes,
    )
    if result.problem == "no_kernels":
        block["reason"] = (
            "ncu profiled no kernel: the program, run again, launched none of the chosen "
            "kernels in the window the timing pass saw"
        )
        block["fix"] = "Fix: check that the program launches the same kernels on every run"
    if not result.ok:
        console.print(f"[yellow]timing only:[/] {block['reason']}\n{block.get('fix') or ''}")
        return block, None
    try:
        tables = read_report(result.report_path, result.metrics)
    except ProfkitError as exc:  # named as the run will hold it, not by the temp folder's path
        reason = str(exc).replace(str(result.report_path), store.REPORT)
        block.update(status="timing_only", problem="report_unreadable", reason=reason)
        console.print(f"[yellow]timing only:[/] {reason}")
        return block, None
    block["kernels_profiled"] = len(tables.kernels)
    if tables.metrics_na:
        block["metrics_na"] = list(tables.metrics_na)
    matched, how = counter_pass.match(selection, tables.kernels, table)
    block["matched_by"] = how
    writer.write_table(store.KERNELS, matched)
    if tables.rules is not None and not tables.rules.empty:
        kept = tables.rules[tables.rules["launch"].isin(set(matched["launch"]))]
        kept = kept.assign(case=kept["launch"].map(matched.set_index("launch")["case"]))
        writer.write_table(store.RULES, kept)
    against = pace.against_plain(result.wall_s, alone)
    console.print(
        f"counter pass: {len(tables.kernels)} launches profiled for {len(matched)} used "
        f"({block['passes']} passes) in {result.wall_s:.1f} s{against} (matched by {how})"
    )
    if opts.source:
        block["source_pass"] = _source(selection, program, writer, console, opts, matched)
    return block, matched


def _source(selection, program, writer, console, opts, matched) -> dict:
    """Source lines for the chosen launches; a failure is recorded, never fatal."""
    from profkit.counters.ncu_rep import read_report

    console.print("source pass: ncu with SourceCounters over the same launches ...")
    with console.status("ncu is profiling source lines ..."):
        result = counter_pass.source_run(
            selection,
            program.child_argv(
                None, start=selection.start, gate=writer.path(GATE) if selection.gate else None
            ),
            writer,
            timeout_s=opts.ncu_timeout_s,
        )
    block = result.to_manifest()
    if result.ok:
        try:
            lines = counter_pass.source_lines(read_report(result.report_path), matched)
        except ProfkitError as exc:
            lines = None
            block.update(problem="report_unreadable", reason=str(exc))
        if lines is None and block.get("problem") is None:
            block.update(problem="no_match", reason="the source pass saw other launches")
        if lines is not None:
            writer.write_table(store.SOURCE_LINES, lines)
            block["lines"] = len(lines)
            console.print(f"source pass: {len(lines)} source lines in {result.wall_s:.1f} s")
            return block
    block["status"] = "failed"
    console.print(f"[yellow]source pass failed:[/] {block['reason']}")
    return block


def _gate_file(
    selection: counter_pass.Selection, writer: store.RunWriter, *, stop: bool
) -> Path | None:
    """The gate's file in the run (kept: it names the calls profiled), or None for a window."""
    if selection.gate is None:
        return None
    return counter_pass.write_gate(selection, writer.path(GATE), stop=stop)


def run_child(argv: list[str]) -> tuple[int, float, list[str]]:
    """Run the child in its own process group, its stdout to ours and its stderr echoed to ours
    (the last lines kept); Ctrl-C stops the whole group. -> (exit status, wall s, stderr tail)."""
    start = time.monotonic()
    proc = subprocess.Popen(
        argv,
        stdout=None,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        env={**child_env(), "PYTHONUNBUFFERED": "1"},
    )
    tail: deque[str] = deque(maxlen=STDERR_TAIL_LINES)

    def echo() -> None:
        for raw in proc.stderr:  # type: ignore[union-attr]
            line = raw.decode(errors="replace")
            sys.stderr.write(line)
            if not _PROFILER_NOISE.match(line):
                tail.append(line.rstrip("\n"))

    reader = threading.Thread(target=echo, daemon=True)
    reader.start()
    try:
        proc.wait()
    except BaseException:
        ncu._kill_group(proc)
        raise
    reader.join(5)
    return proc.returncode, time.monotonic() - start, list(tail)


def _tail_text(tail: list[str]) -> str:
    """The program's last stderr lines for a one-line error, each cut to TAIL_LINE_CHARS."""
    cut = [cut_middle(line.strip(), TAIL_LINE_CHARS) for line in tail[-5:] if line.strip()]
    return f"; its stderr ends: {' | '.join(cut)}" if cut else ""


def top_lines(cases: pd.DataFrame, n: int = 10) -> list[str]:
    """The ranked groups, one line each, for the console after a profile."""
    out = []
    for r in cases.sort_values("rank").head(n).itertuples():
        mean_us = r.device_mean_ms * 1e3
        out.append(f"{r.time_share_pct:5.1f}%  {r.launches:5d} x {mean_us:9.2f} us  {r.variant}")
    return out
