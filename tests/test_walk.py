"""The walk (issue 30's goal): following one launch's record from `diagnose` to its steps visits
at most WALK_GOAL functions.

What counts: every distinct function of profkit (a code object whose file is under profkit/:
functions, methods, property getters, nested functions and lambdas) called between entering
`diagnose` and its return, however often each is called. A comprehension or generator
expression counts as part of the function that holds it, not as a function of its own (Python
3.12 inlines comprehensions, PEP 709: counting them would make the figure the interpreter's).
Nothing else is left out: the record's derived fields, the catalogue's tests, the roofs.

The records are those `diagnose` is handed while the stored zoo, hold-out and example runs are
explained (each case, each launch of a chain), with the contexts the run builds for them.
"""

from __future__ import annotations

import sys
from functools import cache
from pathlib import Path

from stored_runs import EXAMPLE, run_path

import profkit
from profkit import store
from profkit.explain import diagnose as diagnose_module
from profkit.explain import launches, run
from profkit.explain.context import Context
from profkit.explain.record import LaunchRecord

DATA = Path(__file__).parent / "data"
PROFKIT = str(Path(profkit.__file__).parent)
WALK_GOAL = 30
_FOLDED = frozenset({"<listcomp>", "<dictcomp>", "<setcomp>", "<genexpr>"})


def _runs() -> list[Path]:
    runs = [p for p in sorted((DATA / "zoo").iterdir()) if p.is_dir()]
    runs += [p for p in sorted((DATA / "holdout").iterdir()) if p.is_dir()]
    return [*runs, run_path(EXAMPLE)]


@cache
def handed() -> tuple[tuple[LaunchRecord, Context], ...]:
    """Every (record, context) diagnose is handed while the runs are explained (no history:
    the earlier runs change only the steps ruled out, never the path)."""
    seen: list[tuple[LaunchRecord, Context]] = []
    real = diagnose_module.diagnose

    def record(rec: LaunchRecord, ctx: Context):
        seen.append((rec, ctx))
        return real(rec, ctx)

    run.diagnose = launches.diagnose = record
    try:
        for path in _runs():
            run.explain_run(store.load(path), history_runs=[])
    finally:
        run.diagnose = launches.diagnose = real
    return tuple(seen)


def walk(rec: LaunchRecord, ctx: Context) -> set[str]:
    """The profkit functions one diagnosis calls (module docstring: what counts)."""
    called: set = set()

    def profile(frame, event, arg) -> None:
        code = frame.f_code
        if event == "call" and code.co_filename.startswith(PROFKIT) and code.co_name not in _FOLDED:
            called.add(code)

    sys.setprofile(profile)
    try:
        diagnose_module.diagnose(rec, ctx)
    finally:
        sys.setprofile(None)
    return {f"{Path(c.co_filename).relative_to(PROFKIT)}:{c.co_qualname}" for c in called}


def test_the_records_cover_the_stored_runs() -> None:
    pairs = handed()
    assert len(pairs) > 300  # the example run's 254 launches and cases, the zoo, the hold-out
    assert {r.kind for r, _ in pairs} >= {"gemm", "attention", "scatter_atomic", "copy", "norm"}


def test_following_a_record_visits_at_most_the_goal() -> None:
    walks = sorted((len(walk(r, c)), r.name or "") for r, c in handed())
    most, name = walks[-1]
    assert most <= WALK_GOAL, f"{name}: {most} functions (goal {WALK_GOAL})"
