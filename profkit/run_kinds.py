"""What each kind of stored run is explained and drawn by: a lab capture's findings by
profkit.explain and its views by profkit.dashboard; a workload profile's (`profkit profile`) by
profkit.workload; a tune run's path by profkit.tune. The choice lives here, above them all, so none
imports another back."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from profkit.dashboard.page import KindView, write_page
from profkit.explain import Report, explain_run
from profkit.store import PROFILE, TUNE, Run
from profkit.tune.dashboard import tune_sections
from profkit.tune.loop import explain_tune
from profkit.workload.dashboard import profile_sections
from profkit.workload.explain import explain_profile

# a run kind's own findings and views; a kind not listed is explained and drawn as a capture
EXPLAINERS: dict[str, Callable[[Run], Report]] = {PROFILE: explain_profile, TUNE: explain_tune}
VIEWS: dict[str, KindView] = {
    PROFILE: profile_sections,
    TUNE: tune_sections,  # no verdict blocks above it: explain_tune gives a tune run none
}


def for_run(
    run: Run, history_runs: Sequence[Run] | None = None, loaded: Sequence[Run] = ()
) -> Report:
    explainer = EXPLAINERS.get(run.kind)
    return explainer(run) if explainer else explain_run(run, history_runs, loaded)


def write_dashboard(
    runs: Run | Sequence[Run],
    path: Path,
    history_runs: Sequence[Run] = (),
    plotlyjs: str = "shared",
) -> Path:
    """Compute the findings of runs, then write their page (profkit.dashboard.page.write_page)."""
    runs = [runs] if isinstance(runs, Run) else list(runs)
    loaded = [*runs, *history_runs]  # explain's earlier runs among them are not read again
    findings = {run.run_id: list(for_run(run, loaded=loaded)) for run in runs}
    return write_page(runs, findings, path, history_runs, plotlyjs, VIEWS)
