"""Per-launch drill-down for cases that launch more than one kernel: where the time goes, launch by
launch, from kernels.csv (Nsight Compute's duration of each launch, in launch order)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from profkit.dashboard.common import Field, column, hover, layout, text
from profkit.store import Run

PALETTE = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94",
)  # fmt: skip
BAR_PX = 22  # height per case row
HOVER: tuple[Field, ...] = (
    ("kernel", "kernel_name", "", ""),
    ("launch in case", "_pos", ".0f", ""),
    ("ncu duration", "_us", ".4g", " us"),
    ("share of the case", "_share", ".1%", ""),
    ("DRAM throughput", "dram_throughput_pct", ".1f", "%"),
    ("SM throughput", "sm_throughput_pct", ".1f", "%"),
    ("achieved occupancy", "achieved_occupancy_pct", ".1f", "%"),
    ("DRAM bytes", "dram_bytes", ".4s", "B"),
    ("grid x block", "_launch", "", ""),
)


def multi_kernel_launches(run: Run) -> pd.DataFrame:
    """kernels.csv rows of the cases with more than one launch, in the sweep's order, each with
    its position in its case (1, 2, ...) and its share of the case's summed duration."""
    k = run.kernels
    if k is None or k.empty or "case" not in k.columns:
        return pd.DataFrame()
    k = k[k["case"].notna()].copy()
    k["_n"] = k.groupby("case")["case"].transform("size")
    k = k[k["_n"] > 1]
    if k.empty:
        return k
    lay = layout(run)
    k["_order"] = list(
        zip(
            k["variant"].astype(str).map({v.name: i for i, v in enumerate(lay.variants)}),
            k["dtype"].astype(str).map({d: i for i, d in enumerate(lay.dtypes)}),
            k["shape"].astype(str).map({s: i for i, s in enumerate(lay.shapes)}),
            column(k, "launch"),
            strict=True,
        )
    )
    k = k.sort_values("_order", kind="stable", na_position="last")
    k["_pos"] = k.groupby("case").cumcount() + 1
    k["_us"] = column(k, "ncu_duration_ms") * 1e3
    k["_share"] = k["_us"] / k.groupby("case")["_us"].transform("sum")
    grid_, block = column(k, "grid_size"), column(k, "block_size")
    k["_launch"] = [
        "" if pd.isna(g) or pd.isna(b) else f"{g:.0f} x {b:.0f}"
        for g, b in zip(grid_, block, strict=True)
    ]
    return k


def launches_figure(run: Run) -> go.Figure | None:
    """One horizontal bar per multi-kernel case, split into its launches in launch order (colour:
    the kernel), with the case's device p50 from the timing pass marked beside it."""
    k = multi_kernel_launches(run)
    if k.empty:
        return None
    cases = list(dict.fromkeys(k["case"].astype(str)))
    labels = {c: text(c) for c in cases}
    names = list(dict.fromkeys(k["kernel_name"].astype(str)))
    color = {n: PALETTE[i % len(PALETTE)] for i, n in enumerate(names)}
    fig = go.Figure()
    for pos in range(1, int(k["_pos"].max()) + 1):
        sub = k[k["_pos"] == pos]
        data, template = hover(sub, HOVER)
        fig.add_trace(
            go.Bar(
                x=sub["_us"].tolist(),
                y=[labels[c] for c in sub["case"].astype(str)],
                orientation="h",
                marker={"color": [color[n] for n in sub["kernel_name"].astype(str)]},
                showlegend=False,
                name=f"launch {pos}",
                customdata=data,
                hovertemplate=template,
            )
        )
    for n in names:  # legend: one entry per kernel name (the bars carry the colour)
        fig.add_trace(
            go.Bar(x=[None], y=[None], orientation="h", name=text(n), marker={"color": color[n]})
        )
    device = run.cases.drop_duplicates("case", keep="last").set_index("case")
    p50 = column(device, "device_p50_ms").reindex(cases) * 1e3
    fig.add_trace(
        go.Scatter(
            x=[None if pd.isna(v) else float(v) for v in p50],
            y=[labels[c] for c in cases],
            mode="markers",
            name="device p50 (timing pass)",
            marker={"symbol": "line-ns-open", "size": 14, "color": "#000000"},
            hovertemplate="%{y}<br>device p50: %{x:.4g} us<extra></extra>",
        )
    )
    fig.update_layout(
        barmode="stack",
        template="plotly_white",
        height=max(300, BAR_PX * len(cases) + 140),
        margin={"t": 30, "b": 40, "l": 20},
        legend={"orientation": "v", "x": 1.02, "y": 1},
        yaxis={"autorange": "reversed", "automargin": True, "type": "category"},
        xaxis={"title": {"text": "ncu duration per launch (us), stacked in launch order"}},
    )
    return fig
