"""Per-source-line counters of a report captured with ncu's SourceCounters section (the `--source`
pass): one row per (launch, file, line), aggregated from per-PC (SASS address) metrics.

ncu keeps these metrics per instruction: `metric.has_correlation_ids()` is true, and instance i
belongs to the PC `metric.correlation_ids().as_uint64(i)`; `action.source_info(pc)` maps a PC to
its file and line (`file_name()`, `line()`; None without line info) and `action.source_files()`
holds the source text imported with `--import-source yes`. Seen on the H200 (ncu 2025.3.1,
tests/fixtures/fx_source: Triton kernels, SourceCounters + WarpStateStats + SpeedOfLight):

- instructions: `inst_executed` (warp level), `thread_inst_executed`,
  `thread_inst_executed_true`, `derived__avg_thread_executed[_true]`;
- warp-state samples: `smsp__pcsamp_sample_count` (all samples) and
  `smsp__pcsamp_warps_issue_stalled_<reason>` (with a `_not_issued` twin) for the reasons in
  STALL_REASONS;
- memory, only at PCs that access memory: `memory_type` (4 global, 8 local, 16 shared),
  `memory_access_type` (2 load, 4 store, 8 atomic), `memory_access_size_type` (bits),
  `memory_l1_tag_requests_global`, `memory_l2_theoretical_sectors_global` and
  `memory_l2_theoretical_sectors_global_ideal` (NVIDIA's UncoalescedGlobalAccess rule: their
  difference is the excess), `derived__memory_l2_theoretical_sectors_global_excessive`,
  `memory_l2_theoretical_sectors_local` (at local-memory, i.e. register-spill, instructions),
  `memory_l1_wavefronts_shared[_ideal]`, `derived__memory_l1_wavefronts_shared_excessive`,
  `derived__memory_l1_conflicts_shared_nway`;
- also per PC: `smsp__branch_targets_threads_divergent` and `smsp__sass_inst_executed_memdesc_*`.
  Per-opcode tables (`sass__inst_executed_per_opcode*`) and `launch__occupancy_per_*` carry
  correlation ids too, but theirs are opcodes and sizes, not PCs: they are not read here.

A launch counts as measured only when it holds the SourceCounters section: the default counter
pass also stores a per-PC `inst_executed` (seen in tests/fixtures/fx_rmsnorm), without samples or
memory counters. PCs without line info are kept, summed into one row with an empty file and line,
so a launch's rows add up to its totals. The source text is the report's own copy (`--import-source
yes`), never the file on this disk, which may have changed since the capture; without a copy the
text is left empty and the line numbers stand (profkit.explain.hotlines adds the note).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd

STALL_PREFIX = "smsp__pcsamp_warps_issue_stalled_"
# the stall reasons ncu 2025.3.1 samples on the H200, in its order; a reason a newer ncu adds is
# read too and appended after these
STALL_REASONS = (
    "barrier",
    "branch_resolving",
    "dispatch_stall",
    "drain",
    "imc_miss",
    "lg_throttle",
    "long_scoreboard",
    "math_pipe_throttle",
    "membar",
    "mio_throttle",
    "misc",
    "no_instructions",
    "not_selected",
    "selected",
    "short_scoreboard",
    "sleeping",
    "tex_throttle",
    "wait",
    "warpgroup_arrive",
)
# per-line column -> the per-PC metric summed into it
SUMMED = {
    "inst_executed": "inst_executed",
    "samples": "smsp__pcsamp_sample_count",
    "global_sectors": "memory_l2_theoretical_sectors_global",
    "global_sectors_ideal": "memory_l2_theoretical_sectors_global_ideal",
    "local_sectors": "memory_l2_theoretical_sectors_local",
}
LINE_COLUMNS = (
    "case",
    "launch",
    "kernel_name",
    "file",
    "line",
    "source",
    "library",
    "inst_executed",
    "samples",
    *(f"stall_{r}" for r in STALL_REASONS),
    "global_inst",
    "global_sectors",
    "global_sectors_ideal",
    "excess_sectors",
    "local_inst",
    "local_sectors",
)
# a path inside an installed package (Triton's own tl.max, tl.sum): not the user's source
_LIBRARY_MARKS = ("/site-packages/", "/dist-packages/", "/triton/language/")


SECTION = "SourceCounters"


def has_source_counters(action: Any) -> bool:
    """Whether a launch was captured with SourceCounters (and so has per-PC counters). The
    ncu_report of Nsight Compute 2025.3.1's own install has no `IAction.sections()` (PyPI's
    ncu-report 2026.3.1 has): there, the section's per-PC warp samples stand for it."""
    if hasattr(action, "sections"):
        if SECTION not in {s.identifier() for s in action.sections()}:
            return False
    elif not per_pc(action, SUMMED["samples"]):
        return False
    metric = action.metric_by_name(SUMMED["inst_executed"])
    return metric is not None and metric.has_correlation_ids() and metric.num_instances() > 0


def per_pc(action: Any, name: str) -> dict[int, float]:
    """A per-PC metric as {pc: value}; empty when the launch lacks it."""
    metric = action.metric_by_name(name)
    if metric is None or not metric.has_correlation_ids():
        return {}
    ids = metric.correlation_ids()
    return {ids.as_uint64(i): float(metric.as_double(i)) for i in range(metric.num_instances())}


def stall_metrics(action: Any) -> dict[str, str]:
    """reason -> its all-samples metric, STALL_REASONS first, then any other this report has."""
    found = {
        name[len(STALL_PREFIX) :]
        for name in action.metric_names()
        if name.startswith(STALL_PREFIX) and not name.endswith("_not_issued")
    }
    ordered = [r for r in STALL_REASONS if r in found] + sorted(found - set(STALL_REASONS))
    return {r: STALL_PREFIX + r for r in ordered}


def launch_lines(action: Any, identity: dict[str, Any]) -> pd.DataFrame:
    """One launch's per-line table (LINE_COLUMNS, plus a stall column for any reason beyond
    STALL_REASONS); empty when the launch has no SourceCounters."""
    if not has_source_counters(action):
        return pd.DataFrame(columns=list(LINE_COLUMNS))
    summed = {col: per_pc(action, metric) for col, metric in SUMMED.items()}
    stalls = {f"stall_{r}": per_pc(action, m) for r, m in stall_metrics(action).items()}
    inst = summed["inst_executed"]
    pcs = set(inst) | set(summed["samples"])
    where = {pc: _location(action, pc) for pc in pcs}
    rows: dict[tuple[str, int | None], dict[str, float]] = {}
    for pc in sorted(pcs):
        row = rows.setdefault(where[pc], {})
        for col, values in (*summed.items(), *stalls.items()):
            if pc in values:
                row[col] = row.get(col, 0.0) + values[pc]
        ideal = summed["global_sectors_ideal"]
        if pc in summed["global_sectors"]:  # a global-memory instruction
            row["global_inst"] = row.get("global_inst", 0.0) + inst.get(pc, 0.0)
            excess = max(0.0, summed["global_sectors"][pc] - ideal.get(pc, math.nan))
            row["excess_sectors"] = row.get("excess_sectors", 0.0) + (
                excess if not math.isnan(excess) else 0.0
            )
        if pc in summed["local_sectors"]:  # a local-memory (register spill) instruction
            row["local_inst"] = row.get("local_inst", 0.0) + inst.get(pc, 0.0)
    texts = _texts(action, {file for file, _ in rows if file})
    sampled = bool(summed["samples"])  # without warp-state sampling: stalls not measured
    out = []
    for (file, line), values in rows.items():
        text = _line_text(texts.get(file), line)
        counted = {c: values.get(c, 0.0) for c in LINE_COLUMNS[LINE_COLUMNS.index("library") + 1 :]}
        counted.update({c: v for c, v in values.items() if c.startswith("stall_")})
        if not sampled:
            counted.update({c: math.nan for c in counted if c == "samples" or c[:6] == "stall_"})
        out.append(
            {
                **identity,
                "file": file,
                "line": line,
                "source": text,
                "library": any(mark in file for mark in _LIBRARY_MARKS) if file else False,
                **counted,
            }
        )
    columns = list(LINE_COLUMNS) + sorted(
        {c for r in out for c in r if c.startswith("stall_")} - set(LINE_COLUMNS)
    )
    table = pd.DataFrame(out, columns=columns)
    table["line"] = table["line"].astype("Int64")  # an empty line (no line info) stays empty
    return table.sort_values(["file", "line"], na_position="last", ignore_index=True)


def _location(action: Any, pc: int) -> tuple[str, int | None]:
    info = action.source_info(pc)
    if info is None or not info.file_name():
        return ("", None)
    return (str(info.file_name()), int(info.line()))


def _texts(action: Any, files: set[str]) -> dict[str, list[str]]:
    """file -> its lines, for the files the report holds a copy of."""
    embedded = dict(action.source_files() or {})
    return {f: embedded[f].splitlines() for f in files if embedded.get(f)}


def _line_text(text: list[str] | None, line: int | None) -> str:
    if text is None or line is None or not 1 <= line <= len(text):
        return ""
    return text[line - 1].strip()


def report_lines(actions: Sequence[Any], identities: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """Every launch's per-line table, one after the other; None-like (empty) when no launch of
    the report has SourceCounters."""
    parts = [launch_lines(a, ident) for a, ident in zip(actions, identities, strict=True)]
    parts = [p for p in parts if not p.empty]
    if not parts:
        return pd.DataFrame(columns=list(LINE_COLUMNS))
    return pd.concat(parts, ignore_index=True)
