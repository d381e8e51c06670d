"""Hot source lines out, for render: one line in the default view, the per-line table in the
detail view (`explain --case X`), and their markdown and JSON forms."""

from __future__ import annotations

import math
from collections.abc import Callable

from profkit.explain.hotlines import LaunchLines, SourceLines, table_rows


def headline(hot: SourceLines | None, finding: object, *, detail: bool) -> str | None:
    """The line to print for a finding: its hot line; in a detail view also "not measured"."""
    if hot is None:
        return None
    if detail:
        return hot.line_for(finding)
    found = hot.of(finding)
    return found.headline if found is not None else None


def print_lines(para: Callable[..., None], lines: LaunchLines | None) -> None:
    """The notes and the per-line table of one launch (top lines, most samples first): a line of
    figures per source line, its text under it."""
    if lines is None:
        return
    for note in lines.notes:
        para(note, indent=4, first="note: ", style="dim")
    if lines.status == "no_line_info":
        return
    for row in table_rows(lines):
        para(_figures(row), indent=4, first=f"{row['line']}  ")
        if row["source"]:
            para(row["source"], indent=8, style="dim")


def markdown(hot: SourceLines | None, finding: object) -> list[str]:
    found = hot.of(finding) if hot is not None else None
    return [f"  - *Source:* {found.headline}"] if found is not None else []


def _figures(row: dict) -> str:
    said = []
    if row["samples %"] is not None:
        said.append(f"{row['samples %']:.0f}% of samples")
    if row["stalls"]:
        said.append(row["stalls"])
    said.append(f"{_count(row['instructions'])} warp inst")
    if row["sectors_per_request"] is not None:
        said.append(
            f"{row['sectors_per_request']:.1f} sectors/request "
            f"({row['wasted_per_request']:.1f} wasted)"
        )
    if row["spill inst"]:
        said.append(f"{_count(row['spill inst'])} spill inst")
    return "; ".join(said)


def _count(value: float) -> str:
    if isinstance(value, float) and math.isnan(value):
        return "?"
    for size, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= size:
            return f"{value / size:.1f}{unit}"
    return f"{value:.0f}"
