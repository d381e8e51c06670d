"""Device time against host cost per case: where a kernel is host-bound.

host_us is the CPU cost of one call (dispatch + launch), device time the GPU time of one call
(schema 2). A case above the diagonal costs the host more than the GPU: in an eager loop the GPU
waits on Python, and only fewer launches or a CUDA graph help. Schema-1 runs stored no host cost.
"""

from __future__ import annotations

import plotly.graph_objects as go

from profkit.dashboard.common import Field, column, has_data, hover, layout, timed
from profkit.store import Run

HOVER: tuple[Field, ...] = (
    ("device p50", "_device_us", ".4g", " us"),
    ("host cost", "host_us", ".4g", " us"),
    ("Python loop", "loop_us", ".4g", " us per call"),
    ("kernels", "kernel_count", ".0f", ""),
    ("device method", "device_method", "", ""),
)


def missing_reason(run: Run) -> str | None:
    """Why the view cannot be drawn for this run, or None when it can."""
    if not has_data(run.cases, "device_p50_ms") and has_data(run.cases, "step_p50_ms"):
        return (
            "a step-latency run: no single call's device time was measured (step latency and "
            "host cost per step are in the step-latency sections)"
        )
    if not has_data(run.cases, "host_us"):
        schema = run.manifest.get("schema", 1)
        return (
            f"no host cost in this run (schema {schema}: host_us was not measured); "
            "capture again with the current profkit to see where the kernel is host-bound"
        )
    return None


def host_figure(run: Run) -> go.Figure | None:
    """x device p50 (us), y host cost (us), log-log, one series per variant, the line y = x."""
    if missing_reason(run):
        return None
    lay = layout(run)
    cases = timed(run.cases)
    cases = cases[column(cases, "host_us").gt(0)].assign(
        _device_us=column(cases, "device_p50_ms") * 1e3,
    )
    fig = go.Figure()
    for v in lay.variants:
        sub = cases[cases["variant"].astype(str) == v.name]
        if sub.empty:
            continue
        data, template = hover(sub, HOVER)
        fig.add_trace(
            go.Scatter(
                x=sub["_device_us"].tolist(),
                y=sub["host_us"].astype(float).tolist(),
                mode="markers",
                name=v.label,
                legendgroup=v.name,
                marker=v.marker(outline=False),
                customdata=data,
                hovertemplate=template,
            )
        )
    both = list(cases["_device_us"]) + list(cases["host_us"].astype(float))
    lo, hi = min(both) / 2, max(both) * 2
    fig.add_trace(
        go.Scatter(
            x=[lo, hi],
            y=[lo, hi],
            mode="lines",
            name="host cost = device time",
            line={"color": "#000000", "dash": "dot", "width": 1},
            hoverinfo="skip",
        )
    )
    fig.update_xaxes(type="log", title_text="device time per call (us)")
    fig.update_yaxes(type="log", title_text="host cost per call (us)")
    fig.update_layout(
        template="plotly_white",
        height=420,
        margin={"t": 30, "b": 40},
        annotations=[
            {
                "text": "above the line: host-bound",
                "xref": "paper",
                "yref": "paper",
                "x": 0.02,
                "y": 0.98,
                "showarrow": False,
            }
        ],
    )
    return fig
