"""Findings for any stored run: a lab capture's by profkit.explain, a workload profile's (`profkit
profile`) by profkit.workload.explain. The choice lives here, above both, so neither imports the
other back."""

from __future__ import annotations

from collections.abc import Sequence

from profkit.explain import Report, explain_run
from profkit.store import Run
from profkit.workload.explain import explain_profile


def for_run(
    run: Run, history_runs: Sequence[Run] | None = None, loaded: Sequence[Run] = ()
) -> Report:
    if run.manifest.get("kind") == "profile":  # a workload's kernel groups (profkit profile)
        return explain_profile(run)
    return explain_run(run, history_runs, loaded)
