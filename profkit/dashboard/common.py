"""What every view of the dashboard shares: reading columns, the sweep's order, colours, hover."""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from profkit.explain import as_bool, plain_value
from profkit.store import Run

# Warm colours for the lab's kernels and cool/grey ones for baselines: the kernel under study
# stands out in every panel without reading the legend.
LAB_COLORS = ("#d62728", "#ff7f0e", "#8c564b")
BASELINE_COLORS = ("#1f77b4", "#17becf", "#7f7f7f", "#2ca02c", "#9467bd", "#bcbd22")
INCORRECT_COLOR = "#000000"
# Share of a shape's slot that its variants fill, the gap plotly's own grouped bars leave.
GROUP_WIDTH = 0.8
ROW_HEIGHT_PX = 300


def text(value: object) -> str:
    """A name as plotly text: plotly renders its strings as a small HTML subset (tags and
    entities), so a name is escaped to show as written, never as markup."""
    return html.escape("" if value is None else str(value), quote=False)


@dataclass(frozen=True)
class VariantStyle:
    name: str
    baseline: bool
    color: str
    offset: float  # x offset from its shape's tick: variants sit side by side per shape

    @property
    def label(self) -> str:
        return text(f"{self.name} ({'baseline' if self.baseline else 'lab'})")

    def marker(self, outline: bool = True) -> dict:
        """Baselines small circles, the lab's variants larger diamonds (outlined)."""
        out = {
            "color": self.color,
            "symbol": "circle" if self.baseline else "diamond",
            "size": 7 if self.baseline else 10,
        }
        if outline:
            out["line"] = {"width": 0 if self.baseline else 1, "color": "#000000"}
        return out


@dataclass(frozen=True)
class Layout:
    """What every panel shares: the sweep's order of dtypes, shapes and variants."""

    dtypes: list[str]
    shapes: list[str]
    variants: list[VariantStyle]
    width: float  # bar width per variant


# --- reading the tables -------------------------------------------------------------------------


def column(df: pd.DataFrame, name: str) -> pd.Series:
    """A column as numbers; all-empty when the run lacks it (older or minimal runs)."""
    if name not in df.columns:
        return pd.Series(float("nan"), index=df.index)
    return pd.to_numeric(df[name], errors="coerce")


def has_data(df: pd.DataFrame, name: str) -> bool:
    return bool(column(df, name).notna().any())


def ordered(present: Sequence[str], declared: object) -> list[str]:
    """The manifest's sweep order for the values present, then any it does not declare."""
    declared = [str(v) for v in declared] if isinstance(declared, list) else []
    seen = list(dict.fromkeys(str(v) for v in present))
    return [v for v in declared if v in seen] + [v for v in seen if v not in declared]


def layout(run: Run) -> Layout:
    cases, options = run.cases, run.manifest.get("options") or {}
    names = ordered(cases["variant"].astype(str).tolist(), options.get("variants"))
    baseline = cases["baseline"] if "baseline" in cases.columns else pd.Series(False, cases.index)
    step = GROUP_WIDTH / max(len(names), 1)
    variants, lab_i, base_i = [], 0, 0
    for j, name in enumerate(names):
        is_base = as_bool(baseline[cases["variant"].astype(str) == name].iloc[0])
        if is_base:
            color, base_i = BASELINE_COLORS[base_i % len(BASELINE_COLORS)], base_i + 1
        else:
            color, lab_i = LAB_COLORS[lab_i % len(LAB_COLORS)], lab_i + 1
        variants.append(
            VariantStyle(name, is_base, color, round((j - (len(names) - 1) / 2) * step, 6))
        )
    return Layout(
        dtypes=ordered(cases["dtype"].astype(str).tolist(), options.get("dtypes")),
        shapes=ordered(cases["shape"].astype(str).tolist(), options.get("shapes")),
        variants=variants,
        width=step * 0.9,
    )


def rows(run: Run, lay: Layout, dtype: str, variant: str) -> pd.DataFrame:
    """One row per shape of the sweep (empty where the variant was not run at that shape)."""
    cases = run.cases
    sub = cases[(cases["dtype"].astype(str) == dtype) & (cases["variant"].astype(str) == variant)]
    sub = sub.assign(shape=sub["shape"].astype(str))
    return sub.drop_duplicates("shape", keep="last").set_index("shape").reindex(lay.shapes)


def incorrect(rows: pd.DataFrame) -> pd.Series:
    """Rows that ran and failed the reference check (reindexed gaps are not failures)."""
    ran = rows["case"].notna() if "case" in rows.columns else rows["correct"].notna()
    return ran & ~rows["correct"].map(as_bool)


def timed(cases: pd.DataFrame) -> pd.DataFrame:
    """The cases that passed the reference check and have a device time."""
    ok = cases["correct"].map(as_bool) & column(cases, "device_p50_ms").gt(0)
    return cases[ok]


def values(series: pd.Series) -> list:
    return [plain_value(v) for v in series.tolist()]


def xs(variant: VariantStyle, rows: pd.DataFrame) -> list[float]:
    return [i + variant.offset for i in range(len(rows))]


# --- hover text ------------------------------------------------------------------------------


# (label, column, d3 format, unit) per hover line, after the case name
Field = tuple[str, str, str, str]


def hover(rows: pd.DataFrame, fields: Sequence[Field]) -> tuple[list, str]:
    """customdata and a hovertemplate: the case name, then one line per field."""
    names = rows["case"] if "case" in rows.columns else pd.Series(rows.index, index=rows.index)
    names = [None if pd.isna(n) else text(n) for n in names.tolist()]
    columns = [names] + [_hover_values(rows, col, fmt) for _, col, fmt, _ in fields]
    data = [list(point) for point in zip(*columns, strict=True)]
    lines = [
        f"{label}: %{{customdata[{k}]{':' + fmt if fmt else ''}}}{unit}"
        for k, (label, _, fmt, unit) in enumerate(fields, start=1)
    ]
    return data, "<b>%{customdata[0]}</b><br>" + "<br>".join(lines) + "<extra></extra>"


def _hover_values(rows: pd.DataFrame, name: str, fmt: str) -> list:
    """Numbers for a d3 format; escaped text for a field without one."""
    if fmt:
        return values(column(rows, name))
    if name not in rows.columns:
        return [""] * len(rows)
    return ["" if pd.isna(v) else text(v) for v in rows[name].tolist()]


# --- figures ---------------------------------------------------------------------------------


def grid(lay: Layout, titles: Sequence[str]) -> go.Figure:
    """One row per dtype and one column per title, shapes as ticks on every x axis."""
    cols = len(titles)
    fig = make_subplots(
        rows=max(len(lay.dtypes), 1),
        cols=cols,
        subplot_titles=[text(f"{dtype}: {t}") for dtype in lay.dtypes for t in titles],
        vertical_spacing=0.3 / max(len(lay.dtypes), 1),
        horizontal_spacing=0.08,
    )
    ticks = {
        "tickmode": "array",
        "tickvals": list(range(len(lay.shapes))),
        "ticktext": [text(s) for s in lay.shapes],
    }
    fig.update_xaxes(range=[-0.5, len(lay.shapes) - 0.5], **ticks)
    fig.update_layout(
        template="plotly_white",
        height=ROW_HEIGHT_PX * max(len(lay.dtypes), 1),
        **TOP_LEGEND,
    )
    return fig


# panel grids: the legend at the top of the figure, above the panel titles (in paper coordinates
# it sat on the first title whenever its entries were long)
TOP_LEGEND = {
    "margin": {"t": 90, "b": 40},
    "legend": {"orientation": "h", "yref": "container", "y": 1, "yanchor": "top", "x": 0},
}


def one_legend_entry(fig: go.Figure) -> go.Figure:
    """Every panel repeats the variants: list each legend group once (clicking it toggles the
    variant in every panel)."""
    seen: set[str] = set()
    for trace in fig.data:
        trace.showlegend = trace.legendgroup not in seen
        seen.add(trace.legendgroup)
    return fig
