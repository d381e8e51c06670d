"""One self-contained offline HTML page per stored run: the run at a glance.

The run's tables and its findings -> Plotly figures -> one HTML file that embeds plotly.js once, so
the page opens anywhere (no network, no GPU, no torch). Every number drawn or written comes from
the run's manifest or cases.csv, or from a finding computed from them by `profkit.explain`.
"""

from __future__ import annotations

import html
import os
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from profkit.errors import ProfkitError
from profkit.explain import Finding, explain_run
from profkit.findings import as_bool, plain_value
from profkit.store import Run

# Warm colours for the lab's kernels and cool/grey ones for baselines: the kernel under study
# stands out in every panel without reading the legend.
LAB_COLORS = ("#d62728", "#ff7f0e", "#8c564b")
BASELINE_COLORS = ("#1f77b4", "#17becf", "#7f7f7f", "#2ca02c", "#9467bd", "#bcbd22")
INCORRECT_COLOR = "#000000"
# Share of a shape's slot that its variants fill, the gap plotly's own grouped bars leave.
GROUP_WIDTH = 0.8
ROW_HEIGHT_PX = 300
PLOT_CONFIG = {"displaylogo": False, "responsive": True}


@dataclass(frozen=True)
class _Variant:
    name: str
    baseline: bool
    color: str
    offset: float  # x offset from its shape's tick: variants sit side by side per shape

    @property
    def label(self) -> str:
        return f"{self.name} ({'baseline' if self.baseline else 'lab'})"


@dataclass(frozen=True)
class _Layout:
    """What every panel shares: the sweep's order of dtypes, shapes and variants."""

    dtypes: list[str]
    shapes: list[str]
    variants: list[_Variant]
    width: float  # bar width per variant


# --- reading the tables -------------------------------------------------------------------------


def _column(df: pd.DataFrame, name: str) -> pd.Series:
    """A column as numbers; all-empty when the run lacks it (older or minimal runs)."""
    if name not in df.columns:
        return pd.Series(float("nan"), index=df.index)
    return pd.to_numeric(df[name], errors="coerce")


def _has_data(df: pd.DataFrame, name: str) -> bool:
    return bool(_column(df, name).notna().any())


def _ordered(present: Sequence[str], declared: object) -> list[str]:
    """The manifest's sweep order for the values present, then any it does not declare."""
    declared = [str(v) for v in declared] if isinstance(declared, list) else []
    seen = list(dict.fromkeys(str(v) for v in present))
    return [v for v in declared if v in seen] + [v for v in seen if v not in declared]


def _layout(run: Run) -> _Layout:
    cases, options = run.cases, run.manifest.get("options") or {}
    names = _ordered(cases["variant"].tolist(), options.get("variants"))
    baseline = cases["baseline"] if "baseline" in cases.columns else pd.Series(False, cases.index)
    step = GROUP_WIDTH / max(len(names), 1)
    variants, lab_i, base_i = [], 0, 0
    for j, name in enumerate(names):
        is_base = as_bool(baseline[cases["variant"] == name].iloc[0])
        if is_base:
            color, base_i = BASELINE_COLORS[base_i % len(BASELINE_COLORS)], base_i + 1
        else:
            color, lab_i = LAB_COLORS[lab_i % len(LAB_COLORS)], lab_i + 1
        variants.append(_Variant(name, is_base, color, round((j - (len(names) - 1) / 2) * step, 6)))
    return _Layout(
        dtypes=_ordered(cases["dtype"].tolist(), options.get("dtypes")),
        shapes=_ordered(cases["shape"].tolist(), options.get("shapes")),
        variants=variants,
        width=step * 0.9,
    )


def _rows(run: Run, lay: _Layout, dtype: str, variant: str) -> pd.DataFrame:
    """One row per shape of the sweep (empty where the variant was not run at that shape)."""
    cases = run.cases
    sub = cases[(cases["dtype"] == dtype) & (cases["variant"] == variant)]
    return sub.drop_duplicates("shape", keep="last").set_index("shape").reindex(lay.shapes)


def _incorrect(rows: pd.DataFrame) -> pd.Series:
    """Rows that ran and failed the reference check (reindexed gaps are not failures)."""
    ran = rows["case"].notna() if "case" in rows.columns else rows["correct"].notna()
    return ran & ~rows["correct"].map(as_bool)


def _values(series: pd.Series) -> list:
    return [plain_value(v) for v in series.tolist()]


def _xs(variant: _Variant, rows: pd.DataFrame) -> list[float]:
    return [i + variant.offset for i in range(len(rows))]


# --- hover text ------------------------------------------------------------------------------


# (label, column, d3 format, unit) per hover line, after the case name
_Field = tuple[str, str, str, str]


def _hover(rows: pd.DataFrame, fields: Sequence[_Field]) -> tuple[list, str]:
    """customdata and a hovertemplate: the case name, then one line per field."""
    names = rows["case"] if "case" in rows.columns else pd.Series(rows.index, index=rows.index)
    columns = [_values(names)] + [_values(_column(rows, col)) for _, col, _, _ in fields]
    data = [list(point) for point in zip(*columns, strict=True)]
    lines = [
        f"{label}: %{{customdata[{k}]:{fmt}}}{unit}"
        for k, (label, _, fmt, unit) in enumerate(fields, start=1)
    ]
    return data, "<b>%{customdata[0]}</b><br>" + "<br>".join(lines) + "<extra></extra>"


TIMING_HOVER: tuple[_Field, ...] = (
    ("p50", "device_p50_ms", ".4g", " ms"),
    ("p5", "device_p5_ms", ".4g", " ms"),
    ("p95", "device_p95_ms", ".4g", " ms"),
    ("spread (IQR)", "device_iqr_ms", ".3g", " ms"),
    ("bandwidth", "gbps", ".0f", " GB/s"),
    ("of the copy ceiling", "pct_peak_bw", ".1f", "%"),
)
COUNTER_HOVER: tuple[_Field, ...] = (
    ("DRAM throughput", "dram_throughput_pct", ".1f", "%"),
    ("achieved occupancy", "achieved_occupancy_pct", ".1f", "%"),
    ("theoretical occupancy", "theoretical_occupancy_pct", ".1f", "%"),
    ("kernels", "kernel_count", ".0f", ""),
    ("DRAM bytes", "dram_bytes", ".4s", "B"),
    ("model minimum bytes", "bytes", ".4s", "B"),
)


# --- panels ----------------------------------------------------------------------------------


def _grid(lay: _Layout, titles: Sequence[str]) -> go.Figure:
    """One row per dtype and one column per title, shapes as ticks on every x axis."""
    cols = len(titles)
    fig = make_subplots(
        rows=len(lay.dtypes),
        cols=cols,
        subplot_titles=[f"{dtype}: {t}" for dtype in lay.dtypes for t in titles],
        vertical_spacing=0.3 / max(len(lay.dtypes), 1),
        horizontal_spacing=0.08,
    )
    ticks = {"tickmode": "array", "tickvals": list(range(len(lay.shapes))), "ticktext": lay.shapes}
    fig.update_xaxes(range=[-0.5, len(lay.shapes) - 0.5], **ticks)
    fig.update_layout(
        template="plotly_white",
        height=ROW_HEIGHT_PX * max(len(lay.dtypes), 1),
        margin={"t": 60, "b": 40},
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0},
    )
    return fig


def _one_legend_entry(fig: go.Figure) -> go.Figure:
    """Every panel repeats the variants: list each legend group once (clicking it toggles the
    variant in every panel)."""
    seen: set[str] = set()
    for trace in fig.data:
        trace.showlegend = trace.legendgroup not in seen
        seen.add(trace.legendgroup)
    return fig


def _latency_trace(v: _Variant, rows: pd.DataFrame) -> go.Scatter:
    # an incorrect case keeps no timing; masking it here as well means it can never plot as fast
    ok = ~_incorrect(rows)
    p50, p5, p95 = (
        _column(rows, c).where(ok) for c in ("device_p50_ms", "device_p5_ms", "device_p95_ms")
    )
    data, template = _hover(rows, TIMING_HOVER)
    return go.Scatter(
        x=_xs(v, rows),
        y=_values(p50),
        mode="markers",
        name=v.label,
        legendgroup=v.name,
        marker={
            "color": v.color,
            "symbol": "circle" if v.baseline else "diamond",
            "size": 7 if v.baseline else 10,
            "line": {"width": 0 if v.baseline else 1, "color": "#000000"},
        },
        error_y={
            "type": "data",
            "symmetric": False,
            "array": _values(p95 - p50),
            "arrayminus": _values(p50 - p5),
            "color": v.color,
            "thickness": 1.2,
            "width": 3,
        },
        customdata=data,
        hovertemplate=template,
    )


def _incorrect_trace(v: _Variant, rows: pd.DataFrame, y: float) -> go.Scatter | None:
    """An x where a variant failed the reference check, at y (the panel's slow end)."""
    bad = _incorrect(rows)
    if not bad.any():
        return None
    xs = [x for x, b in zip(_xs(v, rows), bad, strict=True) if b]
    data, template = _hover(rows[bad], (("rel_err", "rel_err", ".3g", ""),))
    errors = rows.loc[bad, "error"] if "error" in rows.columns else pd.Series("", rows[bad].index)
    for point, error in zip(data, errors.tolist(), strict=True):
        point.append(plain_value(error) or "output does not match the reference")
    return go.Scatter(
        x=xs,
        y=[y] * len(xs),
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
    lay: _Layout,
    v: _Variant,
    rows: pd.DataFrame,
    y: pd.Series,
    hover: Sequence[_Field],
) -> go.Bar:
    data, template = _hover(rows, hover)
    return go.Bar(
        x=_xs(v, rows),
        y=_values(y),
        width=lay.width,
        name=v.label,
        legendgroup=v.name,
        marker={"color": v.color, "pattern": {"shape": "/" if v.baseline else ""}},
        customdata=data,
        hovertemplate=template,
    )


def latency_figure(run: Run) -> go.Figure:
    """p50 per shape and variant, one panel per dtype, error bars p5..p95, log y."""
    lay = _layout(run)
    fig = _grid(lay, ["p50 latency (error bars p5..p95)"])
    for r, dtype in enumerate(lay.dtypes, start=1):
        panel = {v: _rows(run, lay, dtype, v.name) for v in lay.variants}
        for v, rows in panel.items():
            fig.add_trace(_latency_trace(v, rows), row=r, col=1)
        # failed cases sit at the slowest p95 in the panel: visible, and never read as fast
        slowest = pd.concat([_column(rows, "device_p95_ms") for rows in panel.values()]).max()
        # (1 ms only places the marks when nothing in the whole run was timed)
        top = plain_value(slowest) or plain_value(_column(run.cases, "device_p95_ms").max()) or 1.0
        for v, rows in panel.items():
            trace = _incorrect_trace(v, rows, top)
            if trace is not None:
                fig.add_trace(trace, row=r, col=1)
        fig.update_yaxes(type="log", title_text="ms", row=r, col=1)
    return _one_legend_entry(fig)


def bandwidth_figure(run: Run) -> go.Figure:
    """Share of the run's measured copy bandwidth per shape and variant, one panel per dtype."""
    lay = _layout(run)
    fig = _grid(lay, ["% of the measured copy bandwidth"])
    for r, dtype in enumerate(lay.dtypes, start=1):
        for v in lay.variants:
            rows = _rows(run, lay, dtype, v.name)
            share = _column(rows, "pct_peak_bw").where(~_incorrect(rows))
            fig.add_trace(_bar(lay, v, rows, share, TIMING_HOVER), row=r, col=1)
            trace = _incorrect_trace(v, rows, 0.0)
            if trace is not None:
                fig.add_trace(trace, row=r, col=1)
        fig.update_yaxes(title_text="% of copy", rangemode="tozero", row=r, col=1)
    fig.update_layout(barmode="overlay")  # x positions are set per variant already
    return _one_legend_entry(fig)


def _counter_figure(run: Run, panels: Sequence[tuple[str, str, str, bool]]) -> go.Figure:
    """(title, column, y title, log y) per column of panels, one row per dtype."""
    lay = _layout(run)
    fig = _grid(lay, [title for title, *_ in panels])
    for r, dtype in enumerate(lay.dtypes, start=1):
        for v in lay.variants:
            rows = _rows(run, lay, dtype, v.name)
            for c, (_, column, _, _) in enumerate(panels, start=1):
                y = _column(rows, column)
                bar = _bar(lay, v, rows, y, COUNTER_HOVER)
                fig.add_trace(bar, row=r, col=c)
        for c, (_, column, y_title, log) in enumerate(panels, start=1):
            if column == "dram_bytes":
                fig.add_trace(_model_bytes_trace(run, lay, dtype), row=r, col=c)
            fig.update_yaxes(title_text=y_title, type="log" if log else "linear", row=r, col=c)
    fig.update_layout(barmode="overlay")
    return _one_legend_entry(fig)


def _model_bytes_trace(run: Run, lay: _Layout, dtype: str) -> go.Scatter:
    """The spec's minimum bytes per shape, a line across each group: bytes above it are traffic
    that fusion could save (eager's intermediates, re-reads)."""
    cases = run.cases[run.cases["dtype"] == dtype]
    model = _column(cases, "bytes").groupby(cases["shape"]).max().reindex(lay.shapes)
    xs: list[float | None] = []
    ys: list[float | None] = []
    half = GROUP_WIDTH / 2
    for i, value in enumerate(_values(model)):
        xs += [i - half, i + half, None]
        ys += [value, value, None]
    return go.Scatter(
        x=xs,
        y=ys,
        mode="lines",
        name="model minimum bytes",
        legendgroup="model",
        line={"color": "#000000", "dash": "dash", "width": 1.5},
        hovertemplate=f"{html.escape(dtype)} model minimum: %{{y:.4s}}B<extra></extra>",
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
        present = [p for p in panels if _has_data(run.cases, p[1])]
        if present:
            figs.append(_counter_figure(run, present))
    return figs


def figures(run: Run) -> list[go.Figure]:
    """Every figure of the dashboard, in page order: latency, bandwidth, then counters."""
    return [latency_figure(run), bandwidth_figure(run), *counter_figures(run)]


# --- the page --------------------------------------------------------------------------------


def _e(value: object) -> str:
    return html.escape("" if value is None else str(value))


def _header(run: Run, findings: Sequence[Finding]) -> str:
    m = run.manifest
    fp, ceil, counters = (m.get(k) or {} for k in ("fingerprint", "ceilings", "counters"))
    items = [
        ("kernel", m.get("kernel")),
        ("GPU", fp.get("gpu")),
        ("created", m.get("created")),
        ("copy ceiling", f"{ceil['copy_gbps']:g} GB/s" if "copy_gbps" in ceil else None),
        ("matmul ceiling", _matmul(ceil)),
        ("counters", counters.get("status", "unknown")),
    ]
    if run.timing_only:
        items += [("why", counters.get("reason")), ("fix", counters.get("fix"))]
    rows = "".join(
        f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in items if v is not None and v != ""
    )
    return f"<h1>{_e(run.run_id)}</h1>\n<dl class='meta'>{rows}</dl>\n{_verdicts(findings)}"


def _matmul(ceil: dict) -> str | None:
    if "matmul_tflops" not in ceil:
        return None
    dtype = f" ({ceil['matmul_dtype']})" if ceil.get("matmul_dtype") else ""
    return f"{ceil['matmul_tflops']:g} TFLOP/s{dtype}"


def _verdicts(findings: Sequence[Finding]) -> str:
    parts = []
    for f in findings:
        if f.kind != "verdict":
            continue
        step = f"<p class='next'>next: {_e(f.next_step)}</p>" if f.next_step else ""
        parts.append(
            f"<div class='verdict'><p><strong>{_e(f.subject)}: {_e(f.verdict)}</strong></p>"
            f"<p>{_e(f.text)}</p>{step}</div>"
        )
    return "\n".join(parts)


def _failed_cases(run: Run) -> set[str]:
    if "case" not in run.cases.columns:
        return set()
    return set(run.cases.loc[~run.cases["correct"].map(as_bool), "case"].astype(str))


def _findings_table(run: Run, findings: Sequence[Finding]) -> str:
    failed = _failed_cases(run)
    rows = []
    for f in findings:
        if f.kind == "verdict":
            continue
        cls = " class='incorrect'" if f.case in failed else ""
        rows.append(
            f"<tr{cls}><td>{_e(f.subject)}</td><td>{_e(f.bottleneck or '')}</td>"
            f"<td>{_e(f.text)}</td><td>{_e(f.next_step or '')}</td></tr>"
        )
    if not rows:
        return "<p>No per-case findings.</p>"
    head = "<tr><th>subject</th><th>bottleneck</th><th>finding</th><th>next step</th></tr>"
    return f"<table class='findings'><thead>{head}</thead><tbody>{''.join(rows)}</tbody></table>"


def _no_counters(run: Run) -> str:
    counters = run.manifest.get("counters") or {}
    if run.timing_only:
        why = counters.get("reason") or f"counters status: {counters.get('status', 'unknown')}"
    else:  # the pass ran, but none of the plotted metrics came back (see metrics_na)
        why = "cases.csv holds none of the counter columns plotted here"
    return f"<p class='note'>No hardware counters in this run: {_e(why)}</p>"


COUNTER_NOTE = (
    "<p class='note'>Nsight Compute, one value per case over all its launches (bytes and kernels "
    "summed, percentages weighted by launch duration). The dashed line is the spec's minimum "
    "bytes: DRAM bytes above it are traffic that fusion could save.</p>"
)
# How to read each section; the marks are the same in every panel.
LEGEND_NOTE = (
    "Lab kernels: warm colours, diamonds, solid bars; baselines: cool colours, circles, hatched "
    "bars. A black x marks a case that failed the reference check: it has no timing."
)


STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 1400px; color: #222; }
dl.meta { display: grid; grid-template-columns: max-content auto; gap: .2em 1em; }
dl.meta dt { font-weight: 600; }
.verdict { border-left: 4px solid #d62728; padding: .2em 1em; background: #fafafa; }
table.findings { border-collapse: collapse; font-size: 0.85em; }
table.findings td, table.findings th { border: 1px solid #ddd; padding: .3em .5em;
  vertical-align: top; text-align: left; }
tr.incorrect { background: #fde8e8; }
.note { color: #555; }
"""


def build_dashboard(run: Run, findings: Sequence[Finding]) -> str:
    """The whole page as HTML text: header and verdict, plots, then the findings table."""
    figs = figures(run)
    # plotly.js goes into the first figure only: one copy of the library per page
    divs = [
        fig.to_html(full_html=False, include_plotlyjs=i == 0, config=PLOT_CONFIG)
        for i, fig in enumerate(figs)
    ]
    latency, bandwidth, *counters = divs
    counter_html = "\n".join([COUNTER_NOTE, *counters]) if counters else _no_counters(run)
    title = _e(f"profkit dashboard: {run.run_id}")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title><style>{STYLE}</style></head>
<body>
{_header(run, findings)}
<h2>Latency per shape</h2>
<p class='note'>p50 per case, error bars p5..p95 (log scale). {LEGEND_NOTE}</p>
{latency}
<h2>Share of the measured copy bandwidth</h2>
{bandwidth}
<h2>Hardware counters</h2>
{counter_html}
<h2>Findings per case</h2>
{_findings_table(run, findings)}
</body></html>
"""


def write_dashboard(run: Run, path: Path) -> Path:
    """Compute the findings, build the page, then write it atomically: a failed build or write
    leaves an existing file at path untouched and no temp file behind."""
    page = build_dashboard(run, explain_run(run))  # before touching the disk
    path = Path(path)
    tmp = path.parent / f".{path.name}.{secrets.token_hex(4)}.tmp"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tmp.open("x", encoding="utf-8") as out:
            out.write(page)
        os.replace(tmp, path)  # atomic on one filesystem: readers see the old page or the new
    except BaseException as exc:  # interrupted too: never leave the temp file behind
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise ProfkitError(
                f"could not write the dashboard to {path}: {exc.strerror or exc}; "
                "pick a writable path with enough free space"
            ) from exc
        raise
    return path
