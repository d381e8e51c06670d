"""`profkit capture --source`: a second, deep ncu pass over each case's dominant launch.

After the default counter pass, each case's dominant launch (the largest ncu duration in
kernels.csv) is profiled again with the SourceCounters and WarpStateStats sections and the source
imported into the report, so the run can name its hot lines (source_lines.csv,
profkit.counters.sourcelines). Only those launches are profiled: the NVTX filter names the cases,
the kernel-name filter their dominant kernels (a case that launches the same kernel more than once
profiles each such launch; the reader keeps the longest). The default pass is unchanged; this pass's
wall time is its own cost, stored in the manifest's `source_pass` block and printed. It never fails
the capture: a failure is recorded with its reason and fix, and the run keeps its timing and
counters.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable

import pandas as pd
from rich.console import Console

from profkit import store
from profkit.counters import ncu
from profkit.counters.ncu_rep import PROFKIT_DOMAIN
from profkit.errors import ProfkitError

SECTIONS = ("SourceCounters", "WarpStateStats")
DURATION = "gpu__time_duration.sum"  # to pick the longest of a case's matching launches
JOB = "ncu-source-job.json"
LOG = "ncu-source.log"
_REGEX_SPECIAL = set(r"\^$.|?*+()[]{}")


def regex_escape(name: str) -> str:
    """name as a literal in ncu's regular expressions: only the metacharacters escaped (Python's
    re.escape also escapes spaces and '-', which ncu's regex dialect need not accept)."""
    return "".join("\\" + c if c in _REGEX_SPECIAL else c for c in name)


def dominant_launches(kernels: pd.DataFrame) -> pd.DataFrame:
    """Per case (in first-launch order), its kernels.csv row with the largest ncu duration."""
    named = kernels[kernels["case"].astype(str).str.len() > 0]
    named = named[named["variant"].astype(str).str.len() > 0]
    if named.empty:
        return named
    dur = pd.to_numeric(named["ncu_duration_ms"], errors="coerce").fillna(-1.0)
    picked = named.loc[dur.groupby(named["case"], sort=False).idxmax()]
    return picked.reset_index(drop=True)


def filters(cases: Iterable[str], kernel_names: Iterable[str]) -> tuple[str, list[str]]:
    """(the NVTX include expression, the extra ncu arguments) that restrict ncu to these cases'
    ranges and these kernels, with the source imported."""
    ranges = "|".join(regex_escape(c) for c in dict.fromkeys(cases))
    names = "|".join(regex_escape(k) for k in dict.fromkeys(kernel_names))
    include = f"regex:{PROFKIT_DOMAIN}@({ranges})/"
    return include, ["--kernel-name", f"regex:^({names})$", "--import-source", "yes"]


def source_pass(
    spec_name: str,
    from_file: str | None,
    seed: int,
    kernels: pd.DataFrame | None,
    writer: store.RunWriter,
    console: Console,
    *,
    timeout_s: float,
    clock_control: str = "none",
    counter_wall_s: float | None = None,
) -> dict:
    """Run the deep pass and store source_lines.csv; returns the manifest's `source_pass` block."""
    if kernels is None or kernels.empty:
        return {
            "status": "skipped",
            "problem": "no_counters",
            "reason": "no counters in this run: the source pass profiles each case's dominant "
            "launch, which the counter pass finds",
        }
    dominant = dominant_launches(kernels)
    if dominant.empty:
        return {
            "status": "skipped",
            "problem": "no_cases",
            "reason": "no launch inside a profkit case range: nothing to profile",
        }
    job = {
        "kernel": spec_name,
        "from_file": from_file,
        "seed": seed,
        "cases": [
            {"variant": r.variant, "dtype": r.dtype, "shape": [int(d) for d in r.shape.split("x")]}
            for r in dominant.itertuples()
        ],
    }
    job_path = writer.path(JOB)
    job_path.write_text(json.dumps(job))
    include, extra = filters(dominant["case"].astype(str), dominant["kernel_name"].astype(str))
    console.print(
        f"source pass: ncu with {' + '.join(SECTIONS)} over the dominant launch of "
        f"{len(dominant)} case(s) ..."
    )
    with console.status("ncu is profiling source lines ..."):
        result = ncu.run_counter_pass(
            [sys.executable, "-m", "profkit.ncu_program", str(job_path)],
            writer.path(store.SOURCE_REPORT),
            timeout_s=timeout_s,
            log_path=writer.path(LOG),
            metrics=[DURATION],
            sections=list(SECTIONS),
            clock_control=clock_control,
            nvtx_include=include,
            extra_args=extra,
        )
    job_path.unlink(missing_ok=True)
    block = result.to_manifest()
    block.pop("set", None)
    block["cases"] = len(dominant)
    block["log"] = LOG
    if not result.ok:
        block["status"] = "failed"
        console.print(f"[yellow]source pass failed:[/] {result.message}")
        return block
    from profkit.counters.ncu_rep import read_report

    try:
        tables = read_report(result.report_path)
    except ProfkitError as exc:
        block.update(status="failed", problem="report_unreadable", reason=str(exc))
        block["fix"] = (
            f"Fix: the report stays in the run as {store.SOURCE_REPORT}; read it with "
            "`profkit explain PATH` once ncu_report matches your ncu (pip install -U ncu-report)."
        )
        console.print(f"[yellow]source pass failed:[/] {exc}")
        return block
    lines = pick_lines(tables.source_lines, tables.kernels, dominant)
    block["launches"] = int(lines["launch"].nunique()) if not lines.empty else 0
    block["lines"] = len(lines)
    if lines.empty:
        if tables.source_lines.empty:
            problem, reason = "no_source_counters", "no launch in it holds SourceCounters"
            fix = "Fix: read the ncu log; `ncu --list-sections` must offer SourceCounters."
        else:
            problem = "no_match"
            reason = "none of its launches is a case's dominant launch (case and kernel name)"
            fix = f"Fix: read the ncu log ({LOG}): which ranges and kernels did ncu profile?"
        block.update(
            status="failed", problem=problem, reason=f"ncu wrote its report, but {reason}", fix=fix
        )
        console.print(f"[yellow]source pass:[/] {block['reason']}")
        return block
    writer.write_table(store.SOURCE_LINES, lines)
    cost = f"{result.wall_s:.1f} s"
    if counter_wall_s:
        cost += f"; the counter pass took {counter_wall_s:.1f} s"
    console.print(
        f"source pass: {block['launches']} launch(es), {len(lines)} source lines in {cost}"
    )
    return block


def pick_lines(
    lines: pd.DataFrame, source_kernels: pd.DataFrame, dominant: pd.DataFrame
) -> pd.DataFrame:
    """The per-line rows of each case's dominant launch, numbered as in kernels.csv: of the deep
    report's launches of that case and kernel, the longest."""
    if lines.empty:
        return lines
    out = []
    for row in dominant.itertuples():
        same = source_kernels["kernel_name"] == row.kernel_name
        mine = source_kernels[(source_kernels["case"] == row.case) & same]
        mine = mine[mine["launch"].isin(lines["launch"])]
        if mine.empty:
            continue
        dur = pd.to_numeric(mine["ncu_duration_ms"], errors="coerce").fillna(-1.0)
        picked = int(mine.loc[dur.idxmax(), "launch"])
        part = lines[lines["launch"] == picked].copy()
        part["launch"] = int(row.launch)  # the counter pass's numbering (kernels.csv)
        out.append(part)
    return pd.concat(out, ignore_index=True) if out else lines.iloc[0:0]
