"""A profile run's views on the dashboard page: the headline and the kernel groups' shares of
device time (one bar per group, coloured by kind), then the counters per group. The capture's
views (speedups over baselines, roofline, host cost, device time per shape) read a kernel's
variants and model, which a workload's groups do not have."""

from __future__ import annotations

import plotly.graph_objects as go

from profkit.dashboard import sweep
from profkit.dashboard.html import no_counters, note, plot_div
from profkit.store import Run
from profkit.workload.explain import explain_profile, kind_of

GROUPS_DRAWN = 25  # the rest hold little time and would crowd the chart


def profile_sections(run: Run, prefix: str) -> list[tuple[str, str]]:
    report = explain_profile(run)
    headline = report.notes.get(str(run.manifest.get("kernel")), "")
    found = {f.case: f for f in report.findings}
    top = run.cases.sort_values("rank").head(GROUPS_DRAWN).iloc[::-1]
    fig = go.Figure()
    for kind in dict.fromkeys(kind_of(r) for r in top.to_dict("records")):
        mine = top[[kind_of(r) == kind for r in top.to_dict("records")]]
        fig.add_trace(
            go.Bar(
                x=mine["time_share_pct"],
                y=mine["variant"],
                orientation="h",
                name=kind,
                customdata=[
                    [r.launches, r.device_mean_ms * 1e3, r.device_p95_ms * 1e3, _label(found, r)]
                    for r in mine.itertuples()
                ],
                hovertemplate="%{y}<br>%{x:.1f}% of device time, %{customdata[0]} launches<br>"
                "mean %{customdata[1]:.2f} us, p95 %{customdata[2]:.2f} us<br>"
                "%{customdata[3]}<extra></extra>",
            )
        )
    fig.update_layout(
        xaxis_title="% of the region's device time",
        yaxis={"categoryorder": "array", "categoryarray": list(top["variant"])},  # by rank
        height=max(260, 22 * len(top) + 100),
        margin={"l": 360, "t": 20},
    )
    shown = f"the top {len(top)} of" if len(run.cases) > len(top) else "all"
    body = (
        note(headline)
        + note(
            f"Kernel groups ranked by device time ({shown} {len(run.cases)} groups); hover for "
            "each one's launches, mean and p95 duration and bottleneck."
        )
        + plot_div(fig, f"{prefix}-plot-groups")
    )
    counters = sweep.counter_figures(run)
    counter_body = (
        note("Nsight Compute, the profiled launch(es) of each group.")
        + "".join(plot_div(f, f"{prefix}-plot-counters{i}") for i, f in enumerate(counters))
        if counters
        else no_counters(run)
    )
    return [("Kernel groups", body), ("Hardware counters", counter_body)]


def _label(found: dict, row) -> str:
    f = found.get(row.case)
    if f is None or f.bottleneck is None:
        return "no bottleneck claim"
    return f"{f.bottleneck}-bound" + (f" ({f.unit})" if f.unit else "")
