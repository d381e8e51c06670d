"""The counter pass: ncu on the top kernel groups of the timing pass, one launch of each.

Exact selection (the "gate"): each chosen launch is tied, in the timing export, to the aten op call
that launched it (the outermost op on its thread that a TorchDispatchMode sees: not composite, not
inside another such call), named by the op and its call number from where the first measured step
opens. The counter pass's child counts those calls as they happen, on every thread (autograd's
included: dispatch modes follow the engine there), and starts the CUDA profiler only for the
duration of the chosen calls (ncu --profile-from-start off); ncu's name filter keeps the chosen
kernels among what those calls launch. A call may launch more of them than the one chosen (fused
AdamW: 7 chunks of one kernel, the first chosen); of two filters, the one that keeps fewer is
asked for: ncu's launch count, which ends profiling after the last chosen launch (the optimizer's
later chunks, at the end of a step), or its per-launch-config filter (`--filter-mode
per-launch-config --launch-count N`), the first N launches of each launch configuration (chunks
on one grid cost one launch). So ncu profiles the chosen launches and, at most, other launches of
the chosen kernels inside the same calls, all known in advance. Where a
chosen launch has no such op (Triton kernels of a compiled graph, CUDA graphs), the window below
is used instead.

The window:
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

import functools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from profkit import store
from profkit.counters import ncu
from profkit.counters.metrics import PROFILE_METRICS, PROFILE_SECTIONS
from profkit.counters.sourcepass import DURATION, SECTIONS, regex_escape
from profkit.errors import ProfkitError
from profkit.explain.kernel_family import short_name
from profkit.workload.program import child_environ
from profkit.workload.timing_pass import RANGE_SEP, Region, listed, range_names
from profkit.workload.trace import call_key

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
    # the gate: (aten op, call number from the first measured step) of each chosen launch's call;
    # then the sequence is exactly what ncu profiles, and start/skip/count are not used
    gate: tuple[tuple[str, int], ...] | None = None
    # with the gate: ncu's --launch-count per launch configuration (kernel, grid, block), the most
    # chosen launches that share one; None: `count`, over all the gated launches
    per_config: int | None = None

    def argv(self) -> list[str]:
        pattern = "|".join(regex_escape(n) for n in self.names)
        if self.gate is not None:
            return [
                "--profile-from-start",
                "off",
                "--nvtx",
                "--kernel-name-base",
                "function",
                "--kernel-name",
                f"regex:^(?:{pattern})$",
                *(
                    ["--launch-count", str(self.count)]
                    if self.per_config is None
                    else [
                        "--filter-mode",
                        "per-launch-config",
                        "--launch-count",
                        str(self.per_config),
                    ]
                ),
            ]
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
    ops: pd.DataFrame | None = None,
) -> tuple[Selection, list[str]]:
    """The groups and launches to profile, and notes on what was adjusted. A filter that matches
    nothing is an error naming what there was. With the step range, ncu's window is counted from
    where the first measured step opens: a program that launches other kernels before it on
    another run (torch.compile's first run compiles, later ones read its cache) keeps the window
    on the same launches. With the export's aten op calls (`ops`) and a step range, the selection
    is the gate (exact) where every chosen launch has a call to gate on."""
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
    opened_us = 0.0
    if step_range is not None and region.step_opens_ms:
        start = (step_range, region.steps_skipped)
        opened_us = region.step_opens_ms[region.steps_skipped] * 1e3
        kernels = kernels[kernels["launch_us"].fillna(kernels["start_us"]) >= opened_us]
    sequence = kernels[kernels["name"].map(lambda n: short_name(n, 10**6)).isin(names)].copy()
    sequence["case"] = sequence["order"].map(region.launches.set_index("order")["case"])
    sequence = sequence.reset_index(drop=True)
    positions = sequence.index[sequence["order"].isin(chosen["order"]).to_numpy()]
    skip, count = int(positions.min()), int(positions.max() - positions.min() + 1)
    window = Selection(cases, chosen, names, sequence, skip, count, start)
    if ops is None or start is None:
        return window, notes
    gated = _gate(window, acts, ops, opened_us)
    if gated is None:
        notes.append(
            "a chosen launch has no aten op call to gate on (a compiled graph's kernels?): ncu "
            f"profiles the window of launches {skip}..{skip + count - 1} of those named"
        )
        return window, notes
    return gated, notes


def visible_calls(ops: pd.DataFrame, composite: Callable[[str], bool]) -> pd.Series:
    """Which aten op calls a TorchDispatchMode sees: not composite (those decompose above it) and
    not inside another call it sees on the same thread (it is off while a call runs)."""
    seen: dict = {}
    ordered = ops.sort_values(["tid", "start_us", "end_us"], ascending=[True, True, False])
    tid_was, open_ = object(), []  # (end, seen) of the calls holding this one, on its thread
    columns = (ordered["name"], ordered["start_us"], ordered["end_us"], ordered["tid"])
    for i, name, start, end, tid in zip(ordered.index, *columns, strict=True):
        if tid != tid_was:
            tid_was, open_ = tid, []
        open_ = [o for o in open_ if o[0] >= start]
        sees = not any(o[1] for o in open_) and not composite(str(name))
        seen[i] = sees
        open_.append((end, sees))
    return pd.Series(seen, dtype=bool).reindex(ops.index, fill_value=False)


def _gate(window: Selection, acts: pd.DataFrame, ops: pd.DataFrame, opened_us: float):
    """The gate for the window's chosen launches, or None where one has no visible call."""
    if any(str(n).startswith("triton_") for n in window.names):
        return None  # Inductor's kernels: its graphs launch them outside any aten call
    ops = ops[ops["start_us"] >= opened_us]  # the step opens outside any op call
    ops = ops.assign(seen=visible_calls(ops, is_composite))
    calls = ops[ops["seen"]].sort_values("start_us")
    calls = calls.assign(key=calls["name"].map(call_key))
    number = calls.groupby("key").cumcount()
    trigger: dict[int, tuple[str, int]] = {}
    for chain in window.chosen["op_ids"]:
        held = [i for i in (chain if isinstance(chain, list) else []) if i in number.index]
        if not held:
            return None
        trigger[held[0]] = (call_key(str(ops.at[held[0], "name"])), int(number[held[0]]))
    kernels = acts[acts["kind"] == "kernel"].sort_values("order")
    under = kernels["op_ids"].map(lambda c: isinstance(c, list) and any(i in trigger for i in c))
    named = kernels["name"].map(lambda n: short_name(n, 10**6)).isin(window.names)
    sequence = kernels[under & named].copy()
    sequence["case"] = sequence["order"].map(window.chosen.set_index("order")["case"])
    by_config, per = first_per_config(sequence)
    by_count = up_to_last_chosen(sequence)
    per_config = per if len(by_config) < len(by_count) else None
    sequence = by_config if per_config is not None else by_count
    gate = tuple(sorted(set(trigger.values())))
    return replace(
        window, sequence=sequence, skip=0, count=len(sequence), gate=gate, per_config=per_config
    )


def up_to_last_chosen(sequence: pd.DataFrame) -> pd.DataFrame:
    """What ncu profiles of the gated launches under a global launch count that ends with the
    last chosen one."""
    chosen = sequence["case"].notna().to_numpy()
    last = int(chosen.nonzero()[0].max())
    return sequence.iloc[: last + 1].reset_index(drop=True)


def first_per_config(sequence: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """What ncu profiles of the gated launches (in launch order; `case` set on the chosen ones)
    under its per-launch-config filter, and that filter's count: the first `per` launches of each
    configuration, `per` reaching the deepest chosen launch within its own."""
    config = sequence.apply(launch_config, axis=1)
    nth = sequence.groupby(config, sort=False).cumcount()
    per = int(nth[sequence["case"].notna()].max()) + 1
    return sequence[nth < per].reset_index(drop=True), per


def launch_config(launch: pd.Series) -> tuple[str, str, str]:
    """A launch's configuration as ncu's per-launch-config filter tells them apart: its function,
    grid and block (shared memory, also part of it there, is not in the export: a kernel whose
    launches differ only there is profiled more often than predicted, and matched by name and
    grid)."""
    return (short_name(launch["name"], 10**6), str(launch["grid"]), str(launch["block"]))


@functools.cache
def is_composite(name: str) -> bool:
    """Whether an aten op decomposes above the dispatch modes: its kernel for autograd's key of
    this torch's device is the CompositeImplicitAutograd ("math") one. A trace names the op, not
    its overload, and overloads differ (transpose.int has its own kernel, transpose.Dimname
    decomposes): composite only where every overload that has a kernel there is (out= variants
    left out). Unknown (no torch, no such op): False."""
    try:
        import torch
    except ImportError:
        return False
    key = "AutogradCUDA:" if torch.version.cuda else "AutogradCPU:"
    try:
        packet = getattr(torch.ops.aten, name.split("::", 1)[1])
        overloads = [o for o in packet.overloads() if not o.endswith("out")]
    except (AttributeError, RuntimeError, IndexError):
        overloads = ["default"]
    kinds = []
    for overload in overloads:
        full = name if overload == "default" else f"{name}.{overload}"
        try:
            table = torch._C._dispatch_dump_table(full)
        except RuntimeError:
            continue
        line = next((x for x in table.splitlines() if x.startswith(key)), "")
        if line:  # an overload with no kernel there (the JIT's prim ones) says nothing
            kinds.append("[math kernel]" in line)
    return bool(kinds) and all(kinds)


def write_gate(selection: Selection, path: Path, *, stop: bool = True) -> Path:
    """The gate's file for the child (profkit.workload.child --gate); with stop, the child ends
    the program after the last gated call (its later steps would profile nothing)."""
    assert selection.gate is not None and selection.start is not None
    data = {
        "step_range": selection.start[0],
        "skipped": selection.start[1],
        "calls": [list(g) for g in selection.gate],
        "stop": stop,
    }
    path.write_text(json.dumps(data) + "\n")
    return path


def run(
    selection: Selection,
    program_argv: list[str],
    writer: store.RunWriter,
    *,
    timeout_s: float = 1800.0,
) -> ncu.CounterPass:
    """ncu over the selection's window; the report and log go into the run's folder. ncu hands
    its environment to the program: for its run, ours is the child's. Each replay pass costs
    about 57 ms in a GPT-2 training step on the H200, so the metric set is the lean one
    (metrics.PROFILE_METRICS: stall shares sampled, 14 passes a launch instead of 19)."""
    with child_environ():
        return ncu.run_counter_pass(
            program_argv,
            writer.path(store.REPORT),
            timeout_s=timeout_s,
            log_path=writer.path("ncu.log"),
            metrics=list(PROFILE_METRICS),
            sections=list(PROFILE_SECTIONS),
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
