"""profkit dashboard: stored runs -> one offline Plotly HTML page (no network, GPU or torch).

One module per view (speedup, roofline, host, launches, history, sweep, findings_view,
iteration_latency); `page` assembles them. Every number drawn or written comes from a run's
manifest, cases.csv, kernels.csv or samples, or from a finding or comparison computed from them.
"""

from profkit.dashboard.history import stored_runs
from profkit.dashboard.page import (
    PLOTLY_ASSET,
    build_dashboard,
    default_path,
    plot_div,
    write_page,
)
from profkit.dashboard.sweep import counter_figures, figures

__all__ = [
    "PLOTLY_ASSET",
    "build_dashboard",
    "default_path",
    "stored_runs",
    "counter_figures",
    "figures",
    "plot_div",
    "write_page",
]
