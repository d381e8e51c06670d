"""Hot source lines per profiled launch (runs captured with `--source`): for each case's dominant
launch, the hot line in one sentence and a table of its top lines, from source_lines.csv through
profkit.explain.hotlines (the same figures `explain --case` prints)."""

from __future__ import annotations

import math

from profkit.dashboard.html import esc
from profkit.explain.hotlines import TOP_LINES, by_case, table_rows
from profkit.store import Run

HEADERS = (
    ("line", "line"),
    ("samples %", "warp samples"),
    ("stalls", "top stalls (samples)"),
    ("instructions", "warp instructions"),
    ("sectors_per_request", "sectors / request"),
    ("wasted_per_request", "wasted / request"),
    ("spill inst", "spill instructions"),
    ("source", "source"),
)


def has_lines(run: Run) -> bool:
    return run.source_lines is not None and not run.source_lines.empty


def source_section(run: Run) -> str:
    """One block per case with source lines, in the run's case order; empty without any."""
    if not has_lines(run):
        return ""
    found = by_case(run.source_lines, run.kernels, top=TOP_LINES)
    order = list(dict.fromkeys(run.cases["case"].astype(str))) if "case" in run.cases else []
    cases = [c for c in order if c in found] + [c for c in found if c not in order]
    blocks = []
    for case in cases:
        lines = found[case]
        notes = "".join(f"<p class='note'>{esc(n)}</p>" for n in lines.notes)
        head = "".join(f"<th>{esc(h)}</th>" for _, h in HEADERS)
        rows = "".join(
            "<tr>" + "".join(f"<td>{esc(_cell(k, r[k]))}</td>" for k, _ in HEADERS) + "</tr>"
            for r in table_rows(lines)
        )
        table = (
            f"<table class='summary'><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"
            if rows and lines.status != "no_line_info"
            else ""
        )
        blocks.append(
            f"<h4>{esc(case)}: {esc(lines.kernel_name)} (launch {esc(lines.launch)})</h4>"
            f"<p>{esc(lines.headline)}</p>{notes}{table}"
        )
    return "\n".join(blocks)


def cost_note(run: Run) -> str:
    """What the source pass cost, from the manifest."""
    block = run.manifest.get("source_pass") or {}
    counters = run.manifest.get("counters") or {}
    if block.get("wall_s") is None:
        return ""
    said = f"The source pass took {block['wall_s']:.1f} s of ncu"
    if counters.get("wall_s"):
        said += f" (the counter pass {counters['wall_s']:.1f} s)"
    return said + "."


def _cell(key: str, value: object) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if key == "samples %":
        return f"{value:.1f}%"
    if key in ("sectors_per_request", "wasted_per_request"):
        return f"{value:.1f}"
    if isinstance(value, float):
        return f"{value:,.0f}"
    return str(value)
