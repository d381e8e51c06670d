"""Tables that fit the terminal: as wide as it is (or $COLUMNS), dropping the least useful
columns, never wrapping a row of numbers across lines.

Output that is not a terminal gets rich's default of 80 columns unless $COLUMNS says otherwise;
`--format csv|json` carries every column whatever the width.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rich.console import Console
from rich.measure import Measurement
from rich.table import Table

_WIDE = 100_000  # a width no table reaches: for measuring a table's one-line width


def console(stderr: bool = False) -> Console:
    """A console as wide as the terminal, $COLUMNS when set, 80 when output is not a terminal."""
    return Console(stderr=stderr)


def natural_width(table: Table) -> int:
    """The width `table` needs so that no cell wraps."""
    wide = Console(width=_WIDE)
    return Measurement.get(wide, wide.options, table).maximum


def fit_columns(
    headers: Sequence[str],
    rows: Sequence[Sequence[object]],
    width: int,
    keep_first: Sequence[str],
    build: Callable[[list[str], list[list[object]]], Table],
) -> tuple[Table, list[str]]:
    """build(headers, rows) for the most columns that fit `width` unwrapped; columns are dropped
    from the end of `keep_first` (most wanted first; headers not in it go before any that are),
    never below the first one. Returns the table and the dropped headers, in table order."""
    ranked = [h for h in keep_first if h in headers]
    drop_order = [h for h in reversed(headers) if h not in ranked] + ranked[::-1]
    # a column is as wide as its widest cell: measure a one-row table of those (fast), then build
    widest = [max((row[i] for row in rows), key=lambda v: len(str(v)), default="") for i in
              range(len(headers))]  # fmt: skip
    kept = list(headers)
    while len(kept) > 1:
        index = [headers.index(h) for h in kept]
        if natural_width(build(kept, [[widest[i] for i in index]])) <= width:
            break
        kept.remove(drop_order.pop(0))
    index = [headers.index(h) for h in kept]
    table = build(kept, [[row[i] for i in index] for row in rows])
    return table, [h for h in headers if h not in kept]


def dropped_note(dropped: Sequence[str], width: int, wider: str) -> str:
    """The line under a table that left columns out."""
    return (
        f"({len(dropped)} column(s) left out to fit {width} columns: {', '.join(dropped)}; {wider})"
    )
