"""A profile run's views on the dashboard page: the headline and the kernel groups' shares of
device time (one bar per group, coloured by kind), then the counters per group. The capture's
views (speedups over baselines, roofline, host cost, device time per shape) read a kernel's
variants and model, which a workload's groups do not have."""

from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from profkit.dashboard.html import esc, no_counters, note, plot_div
from profkit.store import Run
from profkit.textsafe import cut_middle
from profkit.workload.explain import explain_profile, kind_of

GROUPS_DRAWN = 25  # the rest hold little time and would crowd the chart
LABEL_WIDTH = 56  # an axis label's characters: a compiled graph's range names run to 80 and more


def profile_sections(run: Run, prefix: str) -> list[tuple[str, str]]:
    report = explain_profile(run)
    headline, *table = report.notes.get(str(run.manifest.get("kernel")), "").split("\n")
    found = {f.case: f for f in report.findings}
    top = run.cases.sort_values("rank").head(GROUPS_DRAWN).iloc[::-1]
    fig = go.Figure()
    for kind in dict.fromkeys(kind_of(r) for r in top.to_dict("records")):
        mine = top[[kind_of(r) == kind for r in top.to_dict("records")]]
        fig.add_trace(
            go.Bar(
                x=mine["time_share_pct"],
                y=axis_labels(mine),
                orientation="h",
                name=kind,
                customdata=[
                    [
                        r.launches,
                        r.device_mean_ms * 1e3,
                        r.device_p95_ms * 1e3,
                        _label(found, r),
                        r.variant,
                    ]
                    for r in mine.itertuples()
                ],  # fmt: skip
                hovertemplate="%{customdata[4]}<br>%{x:.1f}% of device time, %{customdata[0]} "
                "launches<br>mean %{customdata[1]:.2f} us, p95 %{customdata[2]:.2f} us<br>"
                "%{customdata[3]}<extra></extra>",
            )
        )
    fig.update_layout(
        xaxis_title="% of the region's device time",
        yaxis={"categoryorder": "array", "categoryarray": axis_labels(top)},  # by rank
        height=max(260, 22 * len(top) + 100),
        margin={"t": 20},
    )
    shown = f"the top {len(top)} of" if len(run.cases) > len(top) else "all"
    body = (
        note(headline)
        + (f"<pre class='note'>{esc(chr(10).join(table))}</pre>" if table else "")
        + note(
            f"Kernel groups ranked by device time ({shown} {len(run.cases)} groups); hover for "
            "each one's launches, mean and p95 duration and bottleneck."
        )
        + plot_div(fig, f"{prefix}-plot-groups")
    )
    return [("Kernel groups", body), ("Hardware counters", _counters_body(run, prefix))]


# (title, column, axis title) of each counter panel: where a group's time goes at a glance
COUNTER_PANELS = (
    ("DRAM throughput", "dram_throughput_pct", "% of peak"),
    ("SM throughput", "sm_throughput_pct", "% of peak"),
    ("Tensor pipe", "tensor_any_pct", "% of cycles busy"),
    ("achieved occupancy", "achieved_occupancy_pct", "% of peak warps"),
)


def _counters_body(run: Run, prefix: str) -> str:
    """One row per profiled group, in the groups chart's order, and one panel per counter: the
    groups are not variants of one kernel, so the capture's per-case panels do not apply."""
    if run.timing_only:
        return no_counters(run)
    cases = run.cases.sort_values("rank")
    if "tensor_pipe_pct" in cases:  # runs before every MMA kind was read: HMMA's share
        cases = cases.assign(tensor_any_pct=cases.get("tensor_any_pct", cases["tensor_pipe_pct"]))
        cases["tensor_any_pct"] = cases["tensor_any_pct"].fillna(cases["tensor_pipe_pct"])
    panels = [p for p in COUNTER_PANELS if p[1] in cases and cases[p[1]].notna().any()]
    profiled = cases[cases[[p[1] for p in panels]].notna().any(axis=1)] if panels else cases[:0]
    if profiled.empty:
        return no_counters(run)
    rows = profiled.iloc[::-1]  # plotly draws the first category at the bottom
    fig = make_subplots(
        rows=1, cols=len(panels), shared_yaxes=True, horizontal_spacing=0.035,
        subplot_titles=[p[0] for p in panels],
    )  # fmt: skip
    for col, (title, column, unit) in enumerate(panels, 1):
        fig.add_trace(
            go.Bar(
                x=rows[column],
                y=axis_labels(rows),
                orientation="h",
                name=title,
                showlegend=False,
                customdata=[
                    [r.get("kernel_count"), (r.get("ncu_duration_ms") or 0) * 1e3, r["variant"]]
                    for r in rows.to_dict("records")
                ],
                hovertemplate=f"%{{customdata[2]}}<br>{title}: %{{x:.1f}} {unit}<br>"
                "ncu: %{customdata[0]:.0f} launch(es), %{customdata[1]:.2f} us<extra></extra>",
            ),
            row=1,
            col=col,
        )
        fig.update_xaxes(title_text=unit, range=[0, 100], row=1, col=col)
    fig.update_yaxes(categoryorder="array", categoryarray=axis_labels(rows))
    fig.update_layout(height=max(260, 22 * len(rows) + 120), margin={"t": 40})
    shown = len(profiled)
    return note(
        f"Nsight Compute on the profiled launch(es) of {shown} of the {len(cases)} groups "
        "(the counter pass takes the top groups by device time), ranked as above."
    ) + plot_div(fig, f"{prefix}-plot-counters")


def axis_labels(rows) -> list[str]:
    """A group's axis label: its rank, then its label cut in the middle to LABEL_WIDTH (the whole
    label is in the hover); the rank keeps cut labels apart."""
    labels = zip(rows["rank"], rows["variant"].astype(str), strict=True)
    return [f"{int(rank)}. {cut_middle(label, LABEL_WIDTH)}" for rank, label in labels]


def _label(found: dict, row) -> str:
    f = found.get(row.case)
    if f is None or f.bottleneck is None:
        return "no bottleneck claim"
    return f"{f.bottleneck}-bound" + (f" ({f.unit})" if f.unit else "")
