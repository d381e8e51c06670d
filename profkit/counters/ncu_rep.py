"""Read any Nsight Compute report (.ncu-rep) into profkit's tidy tables, with NVIDIA's ncu_report.

One row per kernel launch (kernels.csv), one per guided-analysis rule result (rules.csv) and, for
launches captured with SourceCounters, one per source line (source_lines.csv,
profkit.counters.sourcelines); see docs/tables.md. `nvtx_range` is the innermost push/pop range of
the launch, written as ncu's NVTX filters write it: the bare name in the default domain
(`user_region`), `domain@name` in any other (`profkit@rmsnorm.triton.float16.4096x8192`). ncu
records each domain's stack on its own, never how two domains interleave, so when several domains
hold ranges the default domain's wins, then the others in the order ncu lists them. A report
captured without `--nvtx` records no ranges: empty.
"""

from __future__ import annotations

import glob
import importlib
import lzma
import math
import re
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pandas as pd

from profkit.counters.metrics import METRICS, SAMPLE_COUNT, SAMPLED_STALLS
from profkit.counters.ncu import find_ncu
from profkit.counters.sourcelines import LINE_COLUMNS, report_lines
from profkit.errors import ProfkitError

PROFKIT_DOMAIN = "profkit"
DEFAULT_DOMAIN = "<default domain>"

IDENTITY_COLUMNS = ("case", "kernel", "variant", "dtype", "shape")
KERNEL_COLUMNS = (
    *IDENTITY_COLUMNS,
    "nvtx_range",
    "launch",
    "kernel_name",
    *(m.column for m in METRICS),
    "dram_bytes",
    "shared_mem_bytes",
    "kernel_count",
)
# `title` is NVIDIA's headline for the message ("High Memory Throughput")
RULE_COLUMNS = (
    "launch",
    "case",
    "kernel_name",
    "section",
    "rule",
    "type",
    "message",
    "speedup_pct",
    "title",
)

# kernel.variant.dtype.shape (profkit.spec.case_name); a variant may hold dots, a shape never does
_CASE_RE = re.compile(
    r"(?P<kernel>[^.]+)\.(?P<variant>.+)\.(?P<dtype>[^.]+)\.(?P<shape>\d+(?:x\d+)*)"
)
# NVIDIA's link markup in rule messages, reduced to the text a reader sees
_MARKUP = (
    (re.compile(r"@url:([^:@]*):([^@]*)@"), r"\1 (\2)"),
    (re.compile(r"@(?:section|sass):[^:@]*:([^@]*)@"), r"\1"),
    (re.compile(r"@source:[^:@]*:[^:@]*:([^@]*)@"), r"\1"),
)


@dataclass
class ReportTables:
    kernels: pd.DataFrame  # one row per kernel launch, KERNEL_COLUMNS
    rules: pd.DataFrame  # one row per rule result, RULE_COLUMNS
    metrics_na: list[str] = field(default_factory=list)  # requested, but no launch has a value
    # per-source-line counters (profkit.counters.sourcelines), empty when no launch has
    # SourceCounters
    source_lines: pd.DataFrame = field(
        default_factory=lambda: pd.DataFrame(columns=list(LINE_COLUMNS))
    )


# --- the library ----------------------------------------------------------------------------------


def import_ncu_report() -> ModuleType:
    """NVIDIA's ncu_report: the pip package, else the copy inside a Nsight Compute install."""
    try:
        return importlib.import_module("ncu_report")
    except ImportError:
        pass
    for folder in ncu_python_dirs():
        if str(folder) not in sys.path:
            sys.path.append(str(folder))
        try:
            return importlib.import_module("ncu_report")
        except ImportError:
            continue
    raise ProfkitError(
        "cannot read .ncu-rep files: NVIDIA's ncu_report library is missing; pip install "
        "ncu-report, or install Nsight Compute (its extras/python folder holds ncu_report.py)"
    )


def ncu_python_dirs() -> list[Path]:
    """Nsight Compute installs' extras/python folders: beside the `ncu` profkit would run, then
    the usual install places."""
    found: list[Path] = []
    ncu = find_ncu()
    if ncu:  # <install>/ncu, or a CUDA toolkit's bin/ncu beside its nsight-compute-* folder
        install = Path(ncu).resolve().parent
        found += [
            install / "extras" / "python",
            *sorted(install.parent.glob("nsight-compute*/extras/python"), reverse=True),
        ]
    for pattern in (
        "/opt/nvidia/nsight-compute/*/extras/python",
        "/usr/local/cuda*/nsight-compute*/extras/python",
    ):
        found += [Path(p) for p in sorted(glob.glob(pattern), reverse=True)]  # newest first
    return [d for d in dict.fromkeys(found) if (d / "ncu_report.py").is_file()]


# --- reading a report -----------------------------------------------------------------------------


def read_report(path: str | Path, requested: Sequence[str] = ()) -> ReportTables:
    """The launches and rule results of one .ncu-rep file; `requested` (the metrics given to ncu)
    are checked for n/a values."""
    path = Path(path)
    if not path.is_file():
        raise ProfkitError(f"no such report: {path}")
    if path.suffix == ".xz":  # runs keep their reports compressed
        with tempfile.TemporaryDirectory(prefix="profkit-") as tmp:
            plain = Path(tmp) / path.stem
            try:
                plain.write_bytes(lzma.decompress(path.read_bytes()))
            except lzma.LZMAError as exc:
                raise ProfkitError(f"{path} is not a readable .xz file: {exc}") from exc
            try:
                return read_report(plain, requested)
            except ProfkitError as exc:  # name the user's file, not the temp copy
                raise ProfkitError(str(exc).replace(str(plain), str(path))) from exc
    lib = import_ncu_report()
    try:
        ctx = lib.load_report(str(path))
    except Exception as exc:  # the library's error types are not documented
        reason = " ".join(str(exc).split())
        raise ProfkitError(f"{path} is not a readable Nsight Compute report: {reason}") from exc
    actions = _actions(ctx, path)
    msg_types = {int(t): t.name for t in lib.MsgType}
    kernels, rules = [], []
    for launch, action in enumerate(actions):
        row = _kernel_row(action, launch)
        kernels.append(row)
        rules += _rule_rows(action, row, msg_types)
    return ReportTables(
        kernels=pd.DataFrame(kernels, columns=list(KERNEL_COLUMNS)),
        rules=pd.DataFrame(rules, columns=list(RULE_COLUMNS)),
        metrics_na=_metrics_na(actions, requested),
        source_lines=report_lines(
            actions, [{k: row[k] for k in ("case", "launch", "kernel_name")} for row in kernels]
        ),
    )


def _actions(ctx: Any, path: Path) -> list[Any]:
    actions = [
        ctx.range_by_idx(i).action_by_idx(j)
        for i in range(ctx.num_ranges())
        for j in range(ctx.range_by_idx(i).num_actions())
    ]
    # the library loads empty, foreign and most truncated files without error, holding no results
    if not actions:
        raise ProfkitError(
            f"{path} is not a readable Nsight Compute report: it holds no kernel "
            "results (empty, truncated, or another format)"
        )
    # a result cut off mid-way loads as an action with no name and no metrics
    if any(not a.name() or not a.metric_names() for a in actions):
        raise ProfkitError(f"{path} is truncated or damaged: a kernel result in it is incomplete")
    return actions


def _kernel_row(action: Any, launch: int) -> dict[str, Any]:
    stacks = _nvtx_stacks(action)
    row: dict[str, Any] = _parse_case(stacks.get(PROFKIT_DOMAIN, [""])[-1])
    row["nvtx_range"] = _innermost(stacks)
    row["launch"] = launch
    row["kernel_name"] = action.name(action.NameBase_FUNCTION)
    for m in METRICS:
        row[m.column] = _number(action.metric_by_name(m.ncu)) * m.scale
    _sampled_stalls(action, row)
    row["dram_bytes"] = row["dram_bytes_read"] + row["dram_bytes_write"]
    row["shared_mem_bytes"] = row["shared_mem_static_bytes"] + row["shared_mem_dynamic_bytes"]
    row["kernel_count"] = 1
    return row


def _sampled_stalls(action: Any, row: dict[str, Any]) -> None:
    """Where the stall counters were not collected but PC sampling was (the profile pass), each
    reason's share of the samples, the estimate of the share of active warps' cycles the counter
    measures (each sample is one active warp's state)."""
    samples = _number(action.metric_by_name(SAMPLE_COUNT))
    if not samples > 0:  # NaN too: not sampled
        return
    for reason, name in SAMPLED_STALLS.items():
        column = f"stall_{reason}_pct"
        if math.isnan(row.get(column, math.nan)):
            row[column] = 100.0 * _number(action.metric_by_name(name)) / samples


def _nvtx_stacks(action: Any) -> dict[str, list[str]]:
    """Domain name -> its push/pop ranges, outermost first (as ncu lists them)."""
    state = action.nvtx_state()  # None when the report was captured without --nvtx
    if state is None:
        return {}
    stacks = {}
    for domain_id in state.domains():
        domain = state.domain_by_id(domain_id)
        ranges = list(domain.push_pop_ranges())
        if ranges:
            stacks[domain.name()] = ranges
    return stacks


def _innermost(stacks: dict[str, list[str]]) -> str:
    if DEFAULT_DOMAIN in stacks:
        return stacks[DEFAULT_DOMAIN][-1]
    return next((f"{domain}@{ranges[-1]}" for domain, ranges in stacks.items()), "")


def _parse_case(name: str) -> dict[str, str]:
    """A profkit range name -> case, kernel, variant, dtype, shape; a name of another form is kept
    as the case with the other fields empty."""
    match = _CASE_RE.fullmatch(name)
    parts = match.groupdict() if match else {}
    return {"case": name, **{key: parts.get(key, "") for key in IDENTITY_COLUMNS[1:]}}


def _has_value(metric: Any) -> bool:
    """ncu keeps a metric it could not collect without a value, or as the text "n/a"."""
    if metric is None or not metric.has_value():
        return False
    text = metric.as_string()
    if text is not None:
        return text.strip() not in ("", "n/a")
    return not math.isnan(metric.as_double())


def _number(metric: Any) -> float:
    """A numeric metric's value; NaN when absent, value-less or text."""
    if not _has_value(metric) or metric.as_string() is not None:
        return math.nan
    return float(metric.as_double())


# --- rules ----------------------------------------------------------------------------------------


def _rule_rows(
    action: Any, kernel: dict[str, Any], msg_types: dict[int, str]
) -> list[dict[str, Any]]:
    rows = []
    for result in action.rule_results():
        msg = result.rule_message() if result.has_rule_message() else {}
        speedup = result.speedup_estimation() if result.has_speedup_estimation() else {}
        rows.append(
            {
                "launch": kernel["launch"],
                "case": kernel["case"],
                "kernel_name": kernel["kernel_name"],
                "section": result.section_identifier(),
                "rule": result.rule_identifier(),
                "type": msg_types.get(msg.get("type"), "") if msg else "",
                "message": plain_text(msg.get("message", "")),
                "speedup_pct": speedup.get("speedup", math.nan),
                "title": msg.get("title", ""),
            }
        )
    return rows


def plain_text(message: str) -> str:
    """NVIDIA's rule text without its link markup: "@section:LaunchStats:Launch Statistics@" ->
    "Launch Statistics", "@url:Guide:https://...@" -> "Guide (https://...)"."""
    for pattern, repl in _MARKUP:
        message = pattern.sub(repl, message)
    return message


# --- requested but n/a ----------------------------------------------------------------------------


def _metrics_na(actions: list[Any], requested: Sequence[str]) -> list[str]:
    """Requested metrics that no launch has a value for (ncu prints them "(!) n/a"; the report
    leaves them out altogether, so only the caller, who built ncu's argv, knows to look)."""
    return [
        name
        for name in dict.fromkeys(requested)
        if not any(_has_value(action.metric_by_name(name)) for action in actions)
    ]
