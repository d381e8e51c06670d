"""The hot lines of a launch's source, from its per-line table (source_lines.csv, or a bare
report's SourceCounters): plain data for explain and the dashboard.

A launch's hot line is the line of the user's source (not an installed package's, such as
Triton's own tl.max) holding the most samples of the launch's dominant stall reason; its headline
quotes that share, the sectors its global accesses waste per request (NVIDIA's
UncoalescedGlobalAccess measure: sectors fetched beyond the ideal for the bytes asked), and its
local-memory (register spill) instructions. Every figure comes from the table.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import PurePosixPath

import pandas as pd

TOP_LINES = 6  # lines in the per-line table of `explain --case`
NOT_MEASURED = (
    "not measured (no SourceCounters in this capture; `profkit capture KERNEL --source` adds a "
    "per-line pass for each case's dominant launch)"
)
LINE_INFO_HINT = (
    "no line info in this kernel: Triton emits it unless TRITON_DISABLE_LINE_INFO=1; CUDA needs "
    "nvcc -lineinfo; torch.compile's Triton kernels map to Inductor's generated file (kept with "
    "TORCH_COMPILE_DEBUG=1); library kernels (cuBLAS, ATen) ship without it"
)
NO_TEXT_NOTE = (
    "the report holds no copy of the source text (captured without --import-source yes, or the "
    "file had moved): line numbers only"
)
# not a stall: the warp issued
_ISSUED = "selected"


@dataclass
class Line:
    file: str
    line: int | None
    source: str
    library: bool
    inst_executed: float
    samples: float | None
    stalls: dict[str, float]  # reason -> samples at this line (reasons with any)
    global_inst: float
    global_sectors: float
    excess_sectors: float
    local_inst: float

    @property
    def where(self) -> str:
        if self.line is None:
            return "(no line info)"
        return f"{PurePosixPath(self.file).name}:{self.line}"

    def sectors_per_request(self) -> tuple[float, float] | None:
        """(wasted, fetched) sectors per global request at this line, None without any."""
        if self.global_inst <= 0:
            return None
        return self.excess_sectors / self.global_inst, self.global_sectors / self.global_inst


@dataclass
class LaunchLines:
    """One launch's source lines, or why there are none (status)."""

    launch: int | None
    case: str
    kernel_name: str
    status: str  # measured | no_line_info | not_measured
    stall: str | None = None  # the launch's dominant stall reason (by samples)
    hot: Line | None = None
    hot_share_pct: float | None = None  # the hot line's share of the dominant stall's samples
    spill_line: Line | None = None  # the line with the most local-memory instructions
    spill_share_pct: float | None = None
    local_inst: float = 0.0  # the launch's local-memory (spill) instructions
    lines: list[Line] = field(default_factory=list)  # the top lines, most samples first
    notes: list[str] = field(default_factory=list)

    @property
    def headline(self) -> str:
        """One line: "line 14: 72% of the long-scoreboard stalls, 28 of 32 sectors wasted"."""
        if self.status == "not_measured":
            return NOT_MEASURED
        if self.status == "no_line_info":
            return LINE_INFO_HINT
        if self.hot is None:
            return "no warp-state samples in this launch: no hot line to name"
        said = [f"{self.hot_share_pct:.0f}% of the {_words(self.stall)} stalls"]
        sectors = self.hot.sectors_per_request()
        if sectors and sectors[0] >= 0.5:
            said.append(f"{sectors[0]:.0f} of {sectors[1]:.0f} sectors per request wasted")
        if self.hot.local_inst > 0:
            said.append(f"{_count(self.hot.local_inst)} local-memory (spill) instructions")
        text = f"line {self.hot.line} ({PurePosixPath(self.hot.file).name}): {', '.join(said)}"
        if self.spill_line is not None and self.spill_line is not self.hot:
            text += (
                f"; spills: {self.spill_share_pct:.0f}% of {_count(self.local_inst)} "
                f"local-memory instructions at line {self.spill_line.line}"
            )
        return text

    def to_dict(self) -> dict:
        out = asdict(self)
        out["headline"] = self.headline
        return _plain(out)


def by_launch(table: pd.DataFrame | None, top: int = TOP_LINES) -> dict[int, LaunchLines]:
    """Each launch of the table -> its hot lines."""
    if table is None or table.empty:
        return {}
    out = {}
    for launch, rows in table.groupby("launch", sort=True):
        out[int(launch)] = launch_lines(rows, top)
    return out


def by_case(
    table: pd.DataFrame | None, kernels: pd.DataFrame | None = None, top: int = TOP_LINES
) -> dict[str, LaunchLines]:
    """Each case of the table -> its dominant launch's lines: the launch with the largest ncu
    duration in kernels.csv, or (without it) the one that executed the most instructions."""
    found = by_launch(table, top)
    duration: dict[int, float] = {}
    if kernels is not None and {"launch", "ncu_duration_ms"} <= set(kernels.columns):
        duration = {
            int(k): float(v)
            for k, v in zip(kernels["launch"], kernels["ncu_duration_ms"], strict=True)
            if pd.notna(k) and pd.notna(v)
        }
    out: dict[str, LaunchLines] = {}
    for lines in found.values():
        if not lines.case:
            continue
        held = out.get(lines.case)
        if held is None or _weight(lines, duration) > _weight(held, duration):
            out[lines.case] = lines
    return out


def not_measured(launch: int | None = None, case: str = "", kernel_name: str = "") -> LaunchLines:
    return LaunchLines(launch, case, kernel_name, "not_measured")


def _weight(lines: LaunchLines, duration: Mapping[int, float]) -> tuple[float, float]:
    inst = sum(x.inst_executed for x in lines.lines)
    return (duration.get(lines.launch, -1.0) if lines.launch is not None else -1.0, inst)


def launch_lines(rows: pd.DataFrame, top: int = TOP_LINES) -> LaunchLines:
    """One launch's rows of the per-line table -> its hot line, spill line and top lines."""
    first = rows.iloc[0]
    launch = _int(first.get("launch"))
    out = LaunchLines(
        launch, _str(first.get("case")), _str(first.get("kernel_name")), status="measured"
    )
    lines = [_line(r) for r in rows.to_dict("records")]
    with_info = [x for x in lines if x.line is not None]
    if not with_info:
        out.status = "no_line_info"
        out.lines = lines
        return out
    if any(not x.source for x in with_info):
        out.notes.append(NO_TEXT_NOTE)
    if any(x.line is None and x.inst_executed > 0 for x in lines):
        out.notes.append("some instructions have no line info: they are counted as one row")
    sampled = [x for x in lines if x.samples is not None]
    stall_total: dict[str, float] = {}
    for x in sampled:
        for reason, n in x.stalls.items():
            if reason != _ISSUED:
                stall_total[reason] = stall_total.get(reason, 0.0) + n
    if stall_total and max(stall_total.values()) > 0:
        out.stall = max(stall_total, key=lambda r: stall_total[r])
        stalled = [x for x in with_info if x.stalls.get(out.stall, 0.0) > 0]
        pool = [x for x in stalled if not x.library] or stalled or with_info
        hot = max(pool, key=lambda x: x.stalls.get(out.stall or "", 0.0))
        if hot.stalls.get(out.stall, 0.0) > 0:
            out.hot = hot
            out.hot_share_pct = 100 * hot.stalls[out.stall] / stall_total[out.stall]
    out.local_inst = sum(x.local_inst for x in lines)
    if out.local_inst > 0:
        out.spill_line = max(with_info, key=lambda x: x.local_inst)
        out.spill_share_pct = 100 * out.spill_line.local_inst / out.local_inst
    ranked = sorted(lines, key=lambda x: (-(x.samples or 0.0), -x.inst_executed))
    out.lines = ranked[:top]
    return out


def table_rows(lines: LaunchLines) -> list[dict]:
    """The per-line table explain --case prints: one dict per top line, in order."""
    total = sum(x.samples or 0.0 for x in lines.lines) or math.nan
    rows = []
    for x in lines.lines:
        top = sorted(
            ((r, n) for r, n in x.stalls.items() if r != _ISSUED and n > 0), key=lambda p: -p[1]
        )[:2]
        sectors = x.sectors_per_request()
        rows.append(
            {
                "line": x.where,
                "samples %": None if x.samples is None else 100 * x.samples / total,
                "stalls": ", ".join(f"{_words(r)} {_count(n)}" for r, n in top),
                "instructions": x.inst_executed,
                "sectors_per_request": sectors[1] if sectors is not None else None,
                "wasted_per_request": sectors[0] if sectors is not None else None,
                "spill inst": x.local_inst,
                "source": x.source,
            }
        )
    return rows


def _line(row: Mapping) -> Line:
    samples = row.get("samples")
    sampled = samples is not None and not pd.isna(samples)
    stalls = {
        key[6:]: float(value)
        for key, value in row.items()
        if key.startswith("stall_") and value is not None and not pd.isna(value) and value > 0
    }
    return Line(
        file=_str(row.get("file")),
        line=_int(row.get("line")),
        source=_str(row.get("source")),
        library=str(row.get("library")).lower() in ("true", "1"),
        inst_executed=_num(row.get("inst_executed")),
        samples=float(samples) if sampled else None,
        stalls=stalls,
        global_inst=_num(row.get("global_inst")),
        global_sectors=_num(row.get("global_sectors")),
        excess_sectors=_num(row.get("excess_sectors")),
        local_inst=_num(row.get("local_inst")),
    )


def _words(reason: str | None) -> str:
    return (reason or "?").replace("_", "-")


def _count(n: float) -> str:
    for size, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if n >= size:
            return f"{n / size:.1f}{unit}"
    return f"{n:.0f}"


def _num(value: object) -> float:
    try:
        out = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return 0.0
    return 0.0 if math.isnan(out) else out


def _int(value: object) -> int | None:
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return None
    try:
        return int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return None


def _str(value: object) -> str:
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value)


def _plain(value: object) -> object:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


@dataclass
class SourceLines:
    """A run's (or report's) hot lines, found by a finding's case or launch."""

    measured: bool  # the run or report holds any per-line counters
    cases: dict[str, LaunchLines] = field(default_factory=dict)
    launches: dict[int, LaunchLines] = field(default_factory=dict)
    why_not: str | None = None  # a run whose source pass failed or was skipped: its reason

    def of(self, finding: object) -> LaunchLines | None:
        """The lines a finding speaks for: a launch finding (a bare report) by its launch, a case
        finding by its case's dominant launch; None when it has none."""
        if str(getattr(finding, "kind", "")) == "launch":
            launch = (getattr(finding, "evidence", None) or {}).get("launch")
            if launch is not None:
                return self.launches.get(int(launch))
        case = getattr(finding, "case", None)
        return self.cases.get(case) if case else None

    def line_for(self, finding: object) -> str | None:
        """The one line a detail view prints: the headline, or "not measured"."""
        found = self.of(finding)
        if found is not None:
            return found.headline
        if self.measured:
            return None
        return f"not measured: {self.why_not}" if self.why_not else NOT_MEASURED

    def to_list(self) -> list[dict]:
        seen = {id(x): x for x in [*self.launches.values(), *self.cases.values()]}
        return [x.to_dict() for x in seen.values()]


def for_run(run: object) -> SourceLines:
    """A stored run's hot lines (its source_lines.csv), per case."""
    table = getattr(run, "source_lines", None)
    if table is None or table.empty:
        block = (getattr(run, "manifest", None) or {}).get("source_pass") or {}
        why = None
        if block.get("status") in ("failed", "skipped"):
            reason = block.get("reason") or block.get("problem")
            why = f"the source pass {block['status']} ({reason})"
        return SourceLines(measured=False, why_not=why)
    return SourceLines(True, by_case(table, getattr(run, "kernels", None)), by_launch(table))


def for_report(kernels: pd.DataFrame | None, table: pd.DataFrame | None) -> SourceLines:
    """A bare report's hot lines, per launch (and per case where its launches are in ranges)."""
    if table is None or table.empty:
        return SourceLines(measured=False)
    return SourceLines(True, by_case(table, kernels), by_launch(table))
