"""The counter pass: ncu on the top kernel groups of the timing pass, one launch of each.

The launches are picked from the timing pass, not by NVTX filters: NVTX push/pop ranges belong to
the thread that opened them, so the kernels that loss.backward() launches from autograd's thread
are outside the user's ranges in ncu's eyes, though inside them in time. The timing pass knows
every launch of the program in launch order (CUPTI's correlation ids), so profkit asks ncu for
the kernels of the chosen groups by name (`--kernel-name regex:...`, function names) and for the
window of their launches that holds the chosen ones (`--launch-skip`, `--launch-count`, counted
over the launches that match the name filter, as ncu counts them). The same program, run again,
launches the same kernels in the same order; each profiled launch's name is checked against the
one expected, and where they differ the launches are matched by name and grid instead, and the
run says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd

from profkit import store
from profkit.counters import ncu
from profkit.counters.sourcepass import DURATION, SECTIONS, regex_escape
from profkit.errors import ProfkitError
from profkit.explain.kernel_family import short_name
from profkit.workload.program import child_environ
from profkit.workload.timing_pass import RANGE_SEP, Region, listed, range_names

if TYPE_CHECKING:
    from profkit.counters.ncu_rep import ReportTables

_PASSES_RE = re.compile(r"==PROF== Profiling .* - (\d+) pass(?:es)?")


@dataclass(frozen=True)
class Selection:
    """What the counter pass profiles: groups, the launches chosen for each, ncu's window."""

    cases: list[str]  # the chosen groups' cases, by rank
    chosen: pd.DataFrame  # the chosen launches (program activities' rows, with `case`)
    names: list[str]  # the function names ncu filters on
    sequence: pd.DataFrame  # the program's launches matching that filter, in launch order
    skip: int  # ncu --launch-skip over that sequence
    count: int  # ncu --launch-count
    # (step range, steps before the measured ones): the program starts ncu's profiling where the
    # first measured step opens, and the sequence counts from there
    start: tuple[str, int] | None = None

    def argv(self) -> list[str]:
        pattern = "|".join(regex_escape(n) for n in self.names)
        started = ["--profile-from-start", "off"] if self.start is not None else []
        return [
            *started,
            "--nvtx",  # records each launch's ranges (kernels.csv's nvtx_range); filters nothing
            "--kernel-name-base",
            "function",
            "--kernel-name",
            f"regex:^(?:{pattern})$",
            "--launch-skip",
            str(self.skip),
            "--launch-count",
            str(self.count),
        ]


def in_range(launches: pd.DataFrame, name: str) -> pd.Series:
    """Launches held by the user range or PyTorch op `name`."""
    held = launches["ranges"].map(lambda r: name in r.split(RANGE_SEP))
    return held | (launches["op"].astype(str) == name)


def select(
    acts: pd.DataFrame,
    region: Region,
    table: pd.DataFrame,
    *,
    top: int = 10,
    kernel_regex: str | None = None,
    range_name: str | None = None,
    launch_skip: int = 0,
    launch_count: int = 1,
    step_range: str | None = None,
) -> tuple[Selection, list[str]]:
    """The groups and launches to profile, and notes on what was adjusted. A filter that matches
    nothing is an error naming what there was. With the step range, ncu's window is counted from
    where the first measured step opens: a program that launches other kernels before it on
    another run (torch.compile's first run compiles, later ones read its cache) keeps the window
    on the same launches."""
    notes: list[str] = []
    launches = region.launches
    if range_name is not None:
        inside = in_range(launches, range_name)
        if not inside.any():
            raise ProfkitError(
                f"--range {range_name!r} holds no kernel of the measured region; ranges seen: "
                f"{listed(range_names(region.launches))}"
            )
        launches = launches[inside]
    ranked = table[table["case"].isin(set(launches["case"]))]
    if kernel_regex is not None:
        ranked = ranked[ranked["kernel_name"].str.contains(kernel_regex, regex=True)]
        if ranked.empty:
            names = list(dict.fromkeys(short_name(n) for n in table["kernel_name"]))[:8]
            raise ProfkitError(
                f"--kernel-regex {kernel_regex!r} matches no kernel of the measured region"
                + (f" (within --range {range_name!r})" if range_name else "")
                + f"; the top kernels are: {', '.join(names)}"
            )
    cases = list(ranked.sort_values("rank")["case"].head(top))
    picked = []
    for case in cases:
        mine = launches[launches["case"] == case].sort_values("order")
        skip = launch_skip
        if skip >= len(mine):
            skip = len(mine) - 1
            notes.append(
                f"{case}: {len(mine)} launch(es) in the region, fewer than --launch-skip "
                f"{launch_skip} + 1: its last launch is profiled"
            )
        picked.append(mine.iloc[skip : skip + launch_count])
    chosen = pd.concat(picked).sort_values("order")
    names = sorted({short_name(n, 10**6) for n in chosen["name"]})
    kernels = acts[acts["kind"] == "kernel"].sort_values("order")
    start = None
    if step_range is not None and region.step_opens_ms:
        start = (step_range, region.steps_skipped)
        opened_us = region.step_opens_ms[region.steps_skipped] * 1e3
        kernels = kernels[kernels["launch_us"].fillna(kernels["start_us"]) >= opened_us]
    sequence = kernels[kernels["name"].map(lambda n: short_name(n, 10**6)).isin(names)].copy()
    sequence["case"] = sequence["order"].map(region.launches.set_index("order")["case"])
    sequence = sequence.reset_index(drop=True)
    positions = sequence.index[sequence["order"].isin(chosen["order"]).to_numpy()]
    skip, count = int(positions.min()), int(positions.max() - positions.min() + 1)
    return Selection(cases, chosen, names, sequence, skip, count, start), notes


def run(
    selection: Selection,
    program_argv: list[str],
    writer: store.RunWriter,
    *,
    timeout_s: float = 1800.0,
) -> ncu.CounterPass:
    """ncu over the selection's window; the report and log go into the run's folder. ncu hands
    its environment to the program: for its run, ours is the child's."""
    with child_environ():
        return ncu.run_counter_pass(
            program_argv,
            writer.path(store.REPORT),
            timeout_s=timeout_s,
            log_path=writer.path("ncu.log"),
            nvtx_include=None,
            extra_args=selection.argv(),
        )


def source_run(
    selection: Selection, program_argv: list[str], writer: store.RunWriter, *, timeout_s: float
) -> ncu.CounterPass:
    """The source pass: the same window again, with SourceCounters and WarpStateStats and the
    source imported (profkit.counters.sourcepass's sections), so the chosen launches get their hot
    lines."""
    with child_environ():
        return ncu.run_counter_pass(
            program_argv,
            writer.path(store.SOURCE_REPORT),
            timeout_s=timeout_s,
            log_path=writer.path("ncu-source.log"),
            metrics=[DURATION],
            sections=list(SECTIONS),
            nvtx_include=None,
            extra_args=[*selection.argv(), "--import-source", "yes"],
        )


def source_lines(source: ReportTables, matched: pd.DataFrame) -> pd.DataFrame | None:
    """The chosen launches' source lines, numbered as in kernels.csv; None when the source pass
    saw other launches than the counter pass (the same window, so the same launches in order)."""
    want = matched.set_index("launch")["kernel_name"]
    got = source.kernels.set_index("launch")["kernel_name"].reindex(want.index)
    if not (got == want).all():
        return None
    lines = source.source_lines[source.source_lines["launch"].isin(want.index)].copy()
    lines["case"] = lines["launch"].map(matched.set_index("launch")["case"])
    return lines


def passes(log_text: str) -> int:
    """Replay passes ncu reported over all profiled kernels (from its ==PROF== lines)."""
    return sum(int(n) for n in _PASSES_RE.findall(log_text))


def match(
    selection: Selection, kernels: pd.DataFrame, table: pd.DataFrame
) -> tuple[pd.DataFrame, str]:
    """The chosen launches among those profiled (the window holds others), with their group's
    identity, and how they were matched ("launch order", or "name and grid" when the order
    differed)."""
    expected = selection.sequence.iloc[selection.skip : selection.skip + len(kernels)]
    got = kernels["kernel_name"].astype(str).to_numpy()
    want = [short_name(n, 10**6) for n in expected["name"]]
    if len(want) == len(got) and all(a == b for a, b in zip(got, want, strict=True)):
        chosen = expected["order"].isin(selection.chosen["order"])
        out = kernels[chosen.to_numpy()].assign(case=expected["case"][chosen].to_numpy())
        how = "launch order"
    else:
        out = kernels.assign(case=_by_name_and_grid(selection, kernels))
        out = out[out["case"].notna()]
        per = int(selection.chosen.groupby("case").size().max())
        out = out.groupby("case", sort=False).head(per)  # as many as were chosen, the first
        how = "name and grid (the launch order under ncu differed from the timing pass)"
    out = out.copy()
    ident = table.set_index("case")[["kernel", "variant", "dtype", "shape"]]
    for col in ident.columns:
        out[col] = out["case"].map(ident[col])
    return out.reset_index(drop=True), how


def _by_name_and_grid(selection: Selection, kernels: pd.DataFrame) -> list[str | None]:
    chosen = selection.chosen
    blocks = chosen["grid"].map(_product)
    key = {}
    for name, grid, case in zip(chosen["name"], blocks, chosen["case"], strict=True):
        key.setdefault((short_name(name, 10**6), grid), set()).add(case)
    out = []
    for name, grid in zip(kernels["kernel_name"], kernels["grid_size"], strict=True):
        cases = key.get((str(name), _int(grid)), set())
        out.append(next(iter(cases)) if len(cases) == 1 else None)
    return out


def _product(dims) -> int | None:
    if not isinstance(dims, str) or not dims:
        return None
    total = 1
    for d in dims.split("x"):
        total *= int(d)
    return total


def _int(value) -> int | None:
    return None if pd.isna(value) else int(value)
