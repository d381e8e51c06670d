"""Explain a `profkit profile` run: one finding per kernel group, ranked by device time, and a
headline for the whole region, e.g. "62% of the step is in 3 GEMM groups (3 launches per step) at
70% Tensor; the next 18% is 40 elementwise launches per step at 30% DRAM: fuse them".

Each group is diagnosed as one kernel by the same catalogue as a capture's cases
(profkit.explain), from its profiled launch's counters, with no siblings and no bytes model: a
workload's kernels are not variants of one another. Pure pandas: no torch, no GPU.
"""

from __future__ import annotations

from collections.abc import Mapping

from profkit.explain import launches, rules
from profkit.explain.context import Context
from profkit.explain.evidence import num
from profkit.explain.library import Family, family
from profkit.explain.model import Finding, Report, Unit
from profkit.explain.phrases import step_text
from profkit.explain.roofs import Device
from profkit.explain.run import _no_counters, _Tables, case_finding
from profkit.store import Run

# what a group's kernel does, for the headline, by family (then by PyTorch op)
_KINDS = {
    Family.CUBLAS: "GEMM",
    Family.CUTLASS: "GEMM",
    Family.FLASH: "attention",
    Family.CUDNN: "cuDNN",
    Family.ATEN_ELEMENTWISE: "elementwise",
    Family.ATEN_REDUCE: "reduction",
    Family.ATEN_NORM: "norm/softmax",
    Family.INDUCTOR: "torch.compile (Triton)",
    Family.TRITON: "Triton",
}
_GEMM_OPS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::matmul", "aten::linear")
# the counter that says how busy a unit is, by unit (the finding's evidence names)
_UNIT_METRIC = {
    Unit.DRAM: ("dram_throughput_pct", "DRAM"),
    Unit.L2: ("l2_throughput_pct", "L2"),
    Unit.L1: ("l1_throughput_pct", "L1"),
    Unit.TENSOR: ("tensor_any_pct", "Tensor"),
    Unit.FMA: ("fma_pipe_pct", "FMA"),
    Unit.ALU: ("alu_pipe_pct", "ALU"),
    Unit.XU: ("xu_pipe_pct", "XU"),
    Unit.LSU: ("lsu_pipe_pct", "LSU"),
    Unit.FP64: ("fp64_pipe_pct", "FP64"),
}
HEADLINE_BUCKETS = 2


def is_profile(run: Run) -> bool:
    return run.manifest.get("kind") == "profile"


def explain_profile(run: Run) -> Report:
    report = Report(source=run.run_id, mode=str(run.manifest.get("mode") or "gpu"))
    device = Device.of(run.manifest)
    by_case = launches.by_case(run.kernels)
    # one profiled launch stands for its group: a group's launches are one kernel, not a chain
    tables = _Tables({c: rows[:1] for c, rows in by_case.items()}, rules.by_launch(run.rules))
    no_counters = _no_counters(run)
    rows = run.cases.sort_values("rank").to_dict("records")
    for row in rows:
        ctx = Context(device=device, dtype=str(row.get("dtype") or ""))
        f = case_finding(row, ctx, tables, no_counters)
        launched = _count(int(num(row, "launches") or 0), "launch")
        f.subject = f"{num(row, 'time_share_pct') or 0:.1f}% {row['variant']} ({launched})"
        for col in ("time_share_pct", "step_share_pct", "launches", "launches_per_step",
                    "device_mean_ms", "device_p95_ms", "range", "kernel_name"):  # fmt: skip
            if row.get(col) is not None:
                f.evidence[col] = row[col]
        report.findings.append(f)
    if rows:
        report.notes[str(rows[0]["kernel"])] = headline(rows, report.findings, run.manifest)
    return report


def kind_of(row: Mapping) -> str:
    fam = family(str(row.get("kernel_name") or ""))
    if fam in _KINDS:
        return _KINDS[fam]
    return "GEMM" if str(row.get("op") or "") in _GEMM_OPS else "other"


def headline(rows: list[dict], findings: list[Finding], manifest: Mapping) -> str:
    """The region in two parts: the kind of kernel holding most of the step, then the next, each
    with its busiest unit and the first step for its largest group; then the host gaps."""
    buckets: dict[str, list[tuple[dict, Finding]]] = {}
    for row, f in zip(rows, findings, strict=True):
        buckets.setdefault(kind_of(row), []).append((row, f))
    ranked = sorted(buckets.items(), key=lambda kv: -sum(_share(r) for r, _ in kv[1]))
    region = manifest.get("region") or {}
    where = "the step" if region.get("steps_measured") else "the program's GPU time"
    said = []
    for i, (kind, members) in enumerate(ranked[:HEADLINE_BUCKETS]):
        share = sum(_share(r) for r, _ in members)
        per_step = round(sum(num(r, "launches_per_step") or 0 for r, _ in members))
        what = f"{_count(per_step, f'{kind} launch')} per step ({_count(len(members), 'group')})"
        lead = f"{share:.0f}% of {where} is in" if i == 0 else f"the next {share:.0f}% is"
        text = f"{lead} {what}"
        busy = _busiest(members)
        if busy:
            text += f" at {busy}"
        top = max(members, key=lambda m: _share(m[0]))[1]
        if top.next:
            text += f": {step_text(top.next[0])}"
        said.append(text)
    gap = region.get("host_gap_pct")
    tail = f" GPU idle (host gaps): {gap:.0f}% of {where}." if gap is not None else ""
    steps = ""
    if region.get("steps_measured"):
        steps = (
            f" Measured: {region['steps_measured']} step(s), after {region['steps_skipped']} "
            "warm-up step(s)."
        )
    return "; ".join(said) + "." + tail + steps + _cost(manifest.get("counters") or {})


def _cost(counters: Mapping) -> str:
    """The counter pass's cost, as the run recorded it."""
    if counters.get("status") != "ok" or counters.get("kernels_profiled") is None:
        return ""
    groups = len(counters.get("groups") or [])
    return (
        f" Counter pass: ncu profiled {_count(int(counters['kernels_profiled']), 'launch')} for "
        f"the top {_count(groups, 'group')} ({counters.get('passes')} passes) in "
        f"{counters.get('wall_s')} s."
    )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "es" if noun.endswith("h") else "s")


def _share(row: Mapping) -> float:
    return num(row, "step_share_pct") or 0.0


def _busiest(members: list[tuple[dict, Finding]]) -> str | None:
    """The unit holding most of the members' time, with its time-weighted busy percentage."""
    time: dict[Unit, float] = {}
    for row, f in members:
        if f.unit in _UNIT_METRIC:
            time[f.unit] = time.get(f.unit, 0.0) + _share(row)
    if not time:
        return None
    unit = max(time, key=lambda u: time[u])
    col, name = _UNIT_METRIC[unit]
    pairs = [(num(r, col), _share(r)) for r, f in members if f.unit == unit]
    pairs = [(v, w) for v, w in pairs if v is not None]
    if not pairs or not sum(w for _, w in pairs):
        return None
    value = sum(v * w for v, w in pairs) / sum(w for _, w in pairs)
    return f"{value:.0f}% {name}"
