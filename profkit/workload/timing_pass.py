"""The timing pass's analysis: the child's export -> the measured region (steps after warm-up, or
the whole program), kernel groups ranked by device time, and host gaps. Pure pandas.

A kernel group is one kernel (its full demangled name) inside one enclosing range: the innermost
user range other than the step marker (--group-by range), or the innermost PyTorch op
(--group-by op, the ranges torch.autograd.profiler.emit_nvtx emits). A kernel belongs to a step
when its launch call happened inside the step's range (the GPU may run it later). Host gaps: the
share of the region's GPU span (first activity start to last activity end) with nothing running
on the GPU (no kernel, copy or memset).
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from profkit.errors import ProfkitError
from profkit.explain.kernel_family import LIBRARY, family, short_name
from profkit.workload.trace import FORMAT, KERNEL_COLUMNS, RANGE_COLUMNS, RANGE_SEP, VERSION

GROUP_BY = ("range", "op")
NO_RANGE = "(none)"
METHOD = "torch.profiler (CUPTI) kernel durations, one sample per launch in the measured region"


@dataclass
class Region:
    """What was measured: the steps kept (or the whole program) and its GPU time."""

    launches: pd.DataFrame  # the region's kernel launches, in start order, with `group`
    steps_seen: int = 0  # step ranges found (0: no --step-range)
    steps_skipped: int = 0  # warm-up steps left out
    steps_measured: int = 0
    span_ms: float = 0.0  # first activity start to last activity end
    busy_ms: float = 0.0  # GPU busy (union of kernels, copies, memsets)
    kernel_ms: float = 0.0  # sum of kernel durations
    step_opens_ms: list[float] = field(default_factory=list)  # host clock, every step seen
    notes: list[str] = field(default_factory=list)

    @property
    def host_gap_pct(self) -> float:
        return 100.0 * (1.0 - self.busy_ms / self.span_ms) if self.span_ms > 0 else float("nan")

    def to_manifest(self) -> dict:
        return {
            "steps_seen": self.steps_seen,
            "steps_skipped": self.steps_skipped,
            "steps_measured": self.steps_measured,
            "span_ms": round(self.span_ms, 6),
            "busy_ms": round(self.busy_ms, 6),
            "kernel_ms": round(self.kernel_ms, 6),
            "host_gap_pct": round(self.host_gap_pct, 3),
            "launches": len(self.launches),
            "notes": list(self.notes),
        }


def read_export(path: Path) -> dict:
    """The child's export, or a one-line error naming what is wrong with the file."""
    try:
        with gzip.open(path, "rt") as f:
            data = json.load(f)
    except (OSError, EOFError, ValueError) as exc:
        raise ProfkitError(f"{path} is not a readable timing export: {exc}") from exc
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ProfkitError(f"{path} is not a profkit timing export (no format {FORMAT!r})")
    if data.get("version") != VERSION:
        raise ProfkitError(f"{path} is a timing export of version {data.get('version')!r}, "
                           f"this profkit reads version {VERSION}")  # fmt: skip
    return data


def frames(export: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(activities, user ranges) of an export as tables."""
    columns = export["kernels"].get("columns", list(KERNEL_COLUMNS))
    acts = pd.DataFrame(export["kernels"]["rows"], columns=columns)
    for col in KERNEL_COLUMNS:  # an export written before a column was added
        if col not in acts.columns:
            acts[col] = None
    ranges = pd.DataFrame(export["ranges"]["rows"], columns=list(RANGE_COLUMNS))
    for col in ("start_us", "dur_us", "launch_us"):
        acts[col] = pd.to_numeric(acts[col], errors="coerce")
    acts["ranges"] = acts["ranges"].fillna("").astype(str)
    calls = op_calls(export)
    if calls is not None:  # the outermost aten op holding the launch: what the step asked for
        names = calls["name"].tolist()
        acts["outer_op"] = [
            c and names[c[0]] if isinstance(c, list) else None for c in acts["op_ids"]
        ]
    # launch order: CUPTI's correlation ids count launch calls across threads, as ncu counts them
    acts["order"] = acts["correlation"].fillna(np.inf).rank(method="first").astype(int) - 1
    return acts, ranges


def op_calls(export: dict) -> pd.DataFrame | None:
    """The export's aten op calls (name, start_us, end_us, tid), by row; None in an older one."""
    block = export.get("ops")
    if not block:
        return None
    return pd.DataFrame(block["rows"], columns=block["columns"])


def range_names(acts: pd.DataFrame) -> list[str]:
    """The user ranges and PyTorch ops that hold at least one kernel, most kernels first."""
    kernels = acts[acts["kind"] == "kernel"]
    names = [n for held in kernels["ranges"] for n in held.split(RANGE_SEP) if n]
    names += [str(op) for op in kernels["op"].dropna()]
    return list(pd.Series(names, dtype=object).value_counts().index)


def measure_region(
    acts: pd.DataFrame,
    ranges: pd.DataFrame,
    *,
    step_range: str | None = None,
    steps: int | None = None,
    group_by: str = "range",
) -> Region:
    """The measured region's launches and GPU time. With step_range, the last `steps` step ranges
    (all but the first when the program ran no more than that: at least one warm-up step is left
    out whenever there are two or more)."""
    if group_by not in GROUP_BY:
        raise ProfkitError(f"--group-by must be one of {', '.join(GROUP_BY)}, not {group_by!r}")
    if not (acts["kind"] == "kernel").any():
        raise ProfkitError(
            "the program launched no CUDA kernel: torch.profiler recorded none (does it run on "
            "the GPU? is torch.cuda.is_available() True where it runs?)"
        )
    region = Region(launches=acts.iloc[0:0])
    chosen = acts
    if step_range is not None:
        chosen = _steps(acts, ranges, step_range, steps, region)
    kernels = chosen[chosen["kind"] == "kernel"].copy()
    if kernels.empty:
        raise ProfkitError(
            f"the measured steps of {step_range!r} launched no CUDA kernel (the program's "
            f"{int((acts['kind'] == 'kernel').sum())} kernels were launched outside them)"
        )
    kernels["group_range"] = _group_range(kernels, step_range, group_by)
    region.launches = kernels.sort_values("start_us").reset_index(drop=True)
    start = chosen["start_us"].min()
    end = (chosen["start_us"] + chosen["dur_us"]).max()
    region.span_ms = float(end - start) / 1e3
    region.busy_ms = _union_us(chosen["start_us"], chosen["dur_us"]) / 1e3
    region.kernel_ms = float(kernels["dur_us"].sum()) / 1e3
    return region


def _steps(
    acts: pd.DataFrame, ranges: pd.DataFrame, name: str, steps: int | None, region: Region
) -> pd.DataFrame:
    marks = ranges[ranges["name"] == name].sort_values("start_us")
    if marks.empty:
        seen = list(dict.fromkeys(ranges["name"].astype(str)))
        raise ProfkitError(
            f"--step-range {name!r} matches no range of the program; ranges seen: {listed(seen)}"
        )
    n = len(marks)
    keep = n if steps is None else min(steps, n)
    if n > 1 and keep == n:
        keep = n - 1
        region.notes.append(
            f"the program ran {n} steps; --steps {steps if steps is not None else n} leaves no "
            "warm-up step, so the first is left out"
        )
    elif n == 1:
        region.notes.append("the program ran 1 step: it is measured, with no warm-up left out")
    kept = marks.iloc[n - keep :]
    region.steps_seen, region.steps_skipped, region.steps_measured = n, n - keep, keep
    region.step_opens_ms = [float(t) / 1e3 for t in marks["start_us"]]
    when = acts["launch_us"].fillna(acts["start_us"])
    inside = np.zeros(len(acts), dtype=bool)
    for lo, hi in zip(kept["start_us"], kept["end_us"], strict=True):
        inside |= ((when >= lo) & (when <= hi)).to_numpy()
    return acts[inside]


def _group_range(kernels: pd.DataFrame, step_range: str | None, group_by: str) -> pd.Series:
    if group_by == "op":
        return kernels["op"].fillna(NO_RANGE).astype(str)

    def innermost(held: str) -> str:
        names = [n for n in held.split(RANGE_SEP) if n and n != step_range]
        return names[-1] if names else NO_RANGE

    return kernels["ranges"].map(innermost)


def _union_us(starts: pd.Series, durs: pd.Series) -> float:
    """Length of the union of [start, start + dur) intervals."""
    total, reach = 0.0, -np.inf
    for s, e in sorted(zip(starts, starts + durs, strict=True)):
        if e <= reach:
            continue
        total += e - max(s, reach)
        reach = e
    return float(total)


def _mode(values: pd.Series) -> object:
    values = values.dropna()
    return values.mode().iloc[0] if len(values) else None


def listed(names: list[str], most: int = 12) -> str:
    """Names for a message: the first `most`, then how many more."""
    if not names:
        return "none (the program opened no user range)"
    more = f" and {len(names) - most} more" if len(names) > most else ""
    return ", ".join(names[:most]) + more


def groups(region: Region, workload: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(one row per kernel group, ranked by device time; the raw samples: case, kind, ms)."""
    k = region.launches.copy()
    k["ms"] = k["dur_us"] / 1e3
    rows = []
    for (name, where), g in k.groupby(["name", "group_range"], sort=False):
        by_config = g.groupby(["grid", "block"], dropna=False)["ms"].sum()
        grid, block = by_config.idxmax() if len(by_config) else (None, None)
        ms = g["ms"].to_numpy(float)
        dtypes = g["dtype"].dropna()
        ops = g["op"].dropna()
        rows.append(
            {
                "kernel": workload,
                "kernel_name": name,
                "range": where,
                "op": ops.mode().iloc[0] if len(ops) else None,
                # the op the step called, and the autograd node of backward's launches (exports
                # since issue 33), each the group's most common
                **{c: _mode(g[c]) for c in ("outer_op", "grad_fn") if c in g},
                "dtype": dtypes.mode().iloc[0] if len(dtypes) else "unknown",
                "grid": grid,
                "block": block,
                "launch_configs": len(by_config),
                "launches": len(ms),
                "total_ms": float(ms.sum()),
                "device_mean_ms": float(ms.mean()),
                "device_p50_ms": float(np.percentile(ms, 50)),
                "device_p95_ms": float(np.percentile(ms, 95)),
                "device_p5_ms": float(np.percentile(ms, 5)),
                "device_iqr_ms": float(np.percentile(ms, 75) - np.percentile(ms, 25)),
            }
        )
    table = pd.DataFrame(rows).sort_values(["total_ms", "kernel_name"], ascending=[False, True])
    table = table.reset_index(drop=True)
    table.insert(1, "variant", _labels(table))
    table["shape"] = table["grid"].fillna("0").astype(str)
    table["case"] = table["kernel"] + "." + table["variant"]
    table["rank"] = range(1, len(table) + 1)
    table["time_share_pct"] = 100 * table["total_ms"] / region.kernel_ms
    table["step_share_pct"] = 100 * table["total_ms"] / region.span_ms
    per_step = region.steps_measured or 1
    table["launches_per_step"] = table["launches"] / per_step
    # library code (cuBLAS, ATen...) is not the user's to tune, as a capture's baselines are not
    table["baseline"] = [family(n) in LIBRARY for n in table["kernel_name"]]
    table["correct"] = True
    table["device_reps"] = table["launches"]
    table["device_method"] = METHOD
    case_of = table.set_index(["kernel_name", "range"])["case"]
    k["case"] = case_of.reindex(pd.MultiIndex.from_arrays([k["name"], k["group_range"]])).to_numpy()
    samples = k[["case"]].assign(kind="device", ms=k["ms"])
    region.launches = k
    return table, samples


def _labels(table: pd.DataFrame) -> list[str]:
    """A short, stable name per group: the kernel's base name, (its PyTorch op), @ its range;
    kernels sharing a label are told apart by .2, .3 in the order of their full names."""
    base = [
        label_name(n)
        + (f"({str(op).rsplit('::', 1)[-1]})" if isinstance(op, str) and op else "")
        + ("" if r == NO_RANGE else f"@{r}")
        for n, op, r in zip(table["kernel_name"], table["op"], table["range"], strict=True)
    ]
    order = sorted(range(len(base)), key=lambda i: (base[i], table["kernel_name"].iloc[i]))
    seen: dict[str, int] = {}
    out = list(base)
    for i in order:
        seen[base[i]] = seen.get(base[i], 0) + 1
        if seen[base[i]] > 1:
            out[i] = f"{base[i]}.{seen[base[i]]}"
    return out


# CUTLASS wraps every kernel in one of these templates: its first template argument names it
_WRAPPERS = {"Kernel", "Kernel2", "device_kernel"}


def label_name(name: str) -> str:
    """A kernel's short name for a label: its base name, or for a CUTLASS wrapper the name of
    the kernel it wraps ("cutlass::Kernel2<cutlass_80_tensorop_..._tn_align8>(Params)" ->
    "cutlass_80_tensorop_..._tn_align8")."""
    base = short_name(name)
    if base in _WRAPPERS and "<" in name:
        inner = name.split("<", 1)[1].split(",", 1)[0].rsplit(">", 1)[0]
        return short_name(inner) or base
    return base
