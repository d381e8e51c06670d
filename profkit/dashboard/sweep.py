"""The sweep at a glance: device time, share of the copy ceiling and counters per shape and variant,
one panel per dtype (the dashboard's first views, one run at a time)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go
from plotly.basedatatypes import BaseTraceType

from profkit.dashboard.common import (
    GROUP_WIDTH,
    INCORRECT_COLOR,
    Field,
    Layout,
    VariantStyle,
    column,
    grid,
    has_data,
    hover,
    incorrect,
    layout,
    one_legend_entry,
    text,
    values,
    xs,
)
from profkit.dashboard.common import rows as rows_of
from profkit.explain import plain_value
from profkit.store import Run

TIMING_HOVER: tuple[Field, ...] = (
    ("p50", "device_p50_ms", ".4g", " ms"),
    ("p5", "device_p5_ms", ".4g", " ms"),
    ("p95", "device_p95_ms", ".4g", " ms"),
    ("spread (IQR)", "device_iqr_ms", ".3g", " ms"),
    ("bandwidth", "gbps", ".0f", " GB/s"),
    ("of the copy ceiling", "pct_peak_bw", ".1f", "%"),
)
COUNTER_HOVER: tuple[Field, ...] = (
    ("DRAM throughput", "dram_throughput_pct", ".1f", "%"),
    ("achieved occupancy", "achieved_occupancy_pct", ".1f", "%"),
    ("theoretical occupancy", "theoretical_occupancy_pct", ".1f", "%"),
    ("kernels", "kernel_count", ".0f", ""),
    ("DRAM bytes", "dram_bytes", ".4s", "B"),
    ("model minimum bytes", "bytes", ".4s", "B"),
)


# --- panels ----------------------------------------------------------------------------------


def _latency_trace(v: VariantStyle, rows: pd.DataFrame) -> go.Scatter:
    # an incorrect case keeps no timing; masking it here as well means it can never plot as fast
    ok = ~incorrect(rows)
    p50, p5, p95 = (
        column(rows, c).where(ok) for c in ("device_p50_ms", "device_p5_ms", "device_p95_ms")
    )
    data, template = hover(rows, TIMING_HOVER)
    return go.Scatter(
        x=xs(v, rows),
        y=values(p50),
        mode="markers",
        name=v.label,
        legendgroup=v.name,
        marker=v.marker(),
        error_y={
            "type": "data",
            "symmetric": False,
            "array": values(p95 - p50),
            "arrayminus": values(p50 - p5),
            "color": v.color,
            "thickness": 1.2,
            "width": 3,
        },
        customdata=data,
        hovertemplate=template,
    )


def _incorrect_trace(v: VariantStyle, rows: pd.DataFrame, y: float) -> go.Scatter | None:
    """An x where a variant failed the reference check, at y (the panel's slow end)."""
    bad = incorrect(rows)
    if not bad.any():
        return None
    marks = [x for x, b in zip(xs(v, rows), bad, strict=True) if b]
    data, template = hover(rows[bad], (("rel_err", "rel_err", ".3g", ""),))
    errors = rows.loc[bad, "error"] if "error" in rows.columns else pd.Series("", rows[bad].index)
    for point, error in zip(data, errors.tolist(), strict=True):
        point.append(text(plain_value(error) or "output does not match the reference"))
    return go.Scatter(
        x=marks,
        y=[y] * len(marks),
        mode="markers",
        name="incorrect (no timing)",
        legendgroup="incorrect",
        marker={"color": INCORRECT_COLOR, "symbol": "x", "size": 11},
        customdata=data,
        hovertemplate=template.replace(
            "<extra>", "<br>incorrect: %{customdata[2]}<br>no timing, not plotted<extra>"
        ),
    )


def _bar(
    lay: Layout,
    v: VariantStyle,
    rows: pd.DataFrame,
    y: pd.Series,
    fields: Sequence[Field],
) -> go.Bar:
    data, template = hover(rows, fields)
    return go.Bar(
        x=xs(v, rows),
        y=values(y),
        width=lay.width,
        name=v.label,
        legendgroup=v.name,
        marker={"color": v.color, "pattern": {"shape": "/" if v.baseline else ""}},
        customdata=data,
        hovertemplate=template,
    )


def _add_all(fig: go.Figure, added: list[tuple[BaseTraceType, int, int]]) -> None:
    """Traces into their subplots in one call: plotly re-validates the figure on each add_trace
    with a row and col, which made these figures most of a page's build time."""
    if added:
        traces, rows, cols = zip(*added, strict=True)
        fig.add_traces(list(traces), rows=list(rows), cols=list(cols))


def latency_figure(run: Run) -> go.Figure:
    """p50 per shape and variant, one panel per dtype, error bars p5..p95, log y."""
    lay = layout(run)
    added: list[tuple[BaseTraceType, int, int]] = []  # (trace, row, col), added at once
    fig = grid(lay, ["p50 latency (error bars p5..p95)"])
    for r, dtype in enumerate(lay.dtypes, start=1):
        panel = {v: rows_of(run, lay, dtype, v.name) for v in lay.variants}
        for v, rows in panel.items():
            added.append((_latency_trace(v, rows), r, 1))
        # failed cases sit at the slowest p95 in the panel: visible, and never read as fast
        slowest = pd.concat([column(rows, "device_p95_ms") for rows in panel.values()]).max()
        # (1 ms only places the marks when nothing in the whole run was timed)
        top = plain_value(slowest) or plain_value(column(run.cases, "device_p95_ms").max()) or 1.0
        for v, rows in panel.items():
            trace = _incorrect_trace(v, rows, top)
            if trace is not None:
                added.append((trace, r, 1))
        fig.update_yaxes(type="log", title_text="ms", row=r, col=1)
    _add_all(fig, added)
    return one_legend_entry(fig)


def bandwidth_figure(run: Run) -> go.Figure:
    """Share of the run's measured copy bandwidth per shape and variant, one panel per dtype."""
    lay = layout(run)
    added: list[tuple[BaseTraceType, int, int]] = []  # (trace, row, col), added at once
    fig = grid(lay, ["% of the measured copy bandwidth"])
    for r, dtype in enumerate(lay.dtypes, start=1):
        for v in lay.variants:
            rows = rows_of(run, lay, dtype, v.name)
            share = column(rows, "pct_peak_bw").where(~incorrect(rows))
            added.append((_bar(lay, v, rows, share, TIMING_HOVER), r, 1))
            trace = _incorrect_trace(v, rows, 0.0)
            if trace is not None:
                added.append((trace, r, 1))
        fig.update_yaxes(title_text="% of copy", rangemode="tozero", row=r, col=1)
    fig.update_layout(barmode="overlay")  # x positions are set per variant already
    _add_all(fig, added)
    return one_legend_entry(fig)


def _counter_figure(run: Run, panels: Sequence[tuple[str, str, str, bool]]) -> go.Figure:
    """(title, column, y title, log y) per column of panels, one row per dtype."""
    lay = layout(run)
    added: list[tuple[BaseTraceType, int, int]] = []  # (trace, row, col), added at once
    fig = grid(lay, [title for title, *_ in panels])
    for r, dtype in enumerate(lay.dtypes, start=1):
        for v in lay.variants:
            rows = rows_of(run, lay, dtype, v.name)
            for c, (_, name, _, _) in enumerate(panels, start=1):
                y = column(rows, name)
                bar = _bar(lay, v, rows, y, COUNTER_HOVER)
                added.append((bar, r, c))
        for c, (_, name, y_title, log) in enumerate(panels, start=1):
            if name == "dram_bytes":
                added.append((_model_bytes_trace(run, lay, dtype), r, c))
            fig.update_yaxes(title_text=y_title, type="log" if log else "linear", row=r, col=c)
    fig.update_layout(barmode="overlay")
    _add_all(fig, added)
    return one_legend_entry(fig)


def _model_bytes_trace(run: Run, lay: Layout, dtype: str) -> go.Scatter:
    """The spec's minimum bytes per shape, a line across each group: bytes above it are traffic
    that fusion could save (eager's intermediates, re-reads)."""
    cases = run.cases[run.cases["dtype"] == dtype]
    model = column(cases, "bytes").groupby(cases["shape"]).max().reindex(lay.shapes)
    xs: list[float | None] = []
    ys: list[float | None] = []
    half = GROUP_WIDTH / 2
    for i, value in enumerate(values(model)):
        xs += [i - half, i + half, None]
        ys += [value, value, None]
    return go.Scatter(
        x=xs,
        y=ys,
        mode="lines",
        name="model minimum bytes",
        legendgroup="model",
        line={"color": "#000000", "dash": "dash", "width": 1.5},
        hovertemplate=f"{text(dtype)} model minimum: %{{y:.4s}}B<extra></extra>",
    )


def counter_figures(run: Run) -> list[go.Figure]:
    """Hardware-counter panels, only where the run captured counters: DRAM throughput and
    occupancy per case, then kernels per case beside DRAM bytes (fusion evidence)."""
    if run.timing_only:
        return []  # counters.status is authoritative: a failed pass leaves no trustworthy columns
    groups = (
        (
            ("DRAM throughput", "dram_throughput_pct", "% of peak", False),
            ("achieved occupancy", "achieved_occupancy_pct", "% of peak warps", False),
        ),
        (
            ("kernels per case", "kernel_count", "kernels", False),
            ("DRAM bytes (line: model minimum)", "dram_bytes", "bytes", True),
        ),
    )
    figs = []
    for panels in groups:
        present = [p for p in panels if has_data(run.cases, p[1])]
        if present:
            figs.append(_counter_figure(run, present))
    return figs


def figures(run: Run) -> list[go.Figure]:
    """Every figure of the dashboard, in page order: latency, bandwidth, then counters."""
    return [latency_figure(run), bandwidth_figure(run), *counter_figures(run)]
