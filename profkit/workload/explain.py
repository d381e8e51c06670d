"""Explain a `profkit profile` run: one finding per profiled kernel group, ranked by device time,
and a headline for the whole region, e.g. (the H200 run of examples/transformer_block.py) "The GPU
is idle 62% of the step (host gaps): cut the host cost per call ...; 15% is in 15 GEMM launches per
step (9 groups) at 89% Tensor (7 of them profiled): ...; the next 13% is in 44 elementwise launches
per step (26 groups) at 77% DRAM (2 of them profiled): ... fuse it away ...".

Each group is diagnosed as one kernel by the same catalogue as a capture's cases
(profkit.explain), from its profiled launch's counters, with no siblings and no bytes model: a
workload's kernels are not variants of one another. Each is then named for what it does in the
step (profkit.workload.op_class: matmul, attention, optimizer step, cross-entropy, dtype casts
...), and where its class has a known fix (a fused optimizer's step is its precision or state, not
fusion; a cross-entropy on materialized logits is a fused linear + cross-entropy; autocast's weight
casts are a bf16 copy of the weights) that fix comes first. Below the headline, one table: the
step's time per op class. Pure pandas: no torch, no GPU.
"""

from __future__ import annotations

from collections.abc import Mapping

from profkit.counters.metrics import SAMPLE_COUNT
from profkit.explain import CaseTables, case_finding, launches, ncu_rules, why_no_counters
from profkit.explain.context import Context
from profkit.explain.evidence import num
from profkit.explain.kernel_family import family
from profkit.explain.kinds import KernelKind, Owner
from profkit.explain.model import Action, Advice, Finding, Report, Unit
from profkit.explain.phrases import advice_text
from profkit.explain.record import LaunchRecord
from profkit.explain.roofs import Device
from profkit.store import Run
from profkit.workload import pace
from profkit.workload.op_class import OpClass, fix, label, op_class

# what a group's kernel does, for the headline (its kind: profkit.explain.kinds)
_LABELS = {
    KernelKind.GEMM: "GEMM",
    KernelKind.ATTENTION: "attention",
    KernelKind.CONVOLUTION: "convolution",
    KernelKind.NORM: "norm/softmax",
    KernelKind.REDUCTION: "reduction",
    KernelKind.SCAN: "scan",
    KernelKind.SORT: "sort",
    KernelKind.SCATTER_ATOMIC: "scatter/atomic",
    KernelKind.GATHER: "gather",
    KernelKind.COPY: "elementwise",  # ATen's copies, casts and fills run its elementwise kernels
    KernelKind.ELEMENTWISE: "elementwise",
}
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


def explain_profile(run: Run) -> Report:
    """One finding per explained group (those the counter pass profiled, or the top --top when
    the run is timing only), ranked; the headline covers every group."""
    report = Report(source=run.run_id, mode=str(run.manifest.get("mode") or "gpu"))
    device = Device.of(run.manifest)
    by_case = launches.by_case(run.kernels)
    # one profiled launch stands for its group: a group's launches are one kernel, not a chain
    tables = CaseTables(
        {c: rows[:1] for c, rows in by_case.items()}, ncu_rules.by_launch(run.rules)
    )
    no_counters = why_no_counters(run)
    rows = run.cases.sort_values("rank").to_dict("records")
    found: dict[str, Finding] = {}
    for row in explained(run, rows):
        ctx = Context(device=device, dtype=str(row.get("dtype") or ""))
        f = case_finding(row, ctx, tables, no_counters)
        launched = _count(int(num(row, "launches") or 0), "launch")
        cls = op_class(row)
        share = num(row, "time_share_pct") or 0
        f.subject = f"{share:.1f}% {label(row, cls)}: {row['variant']} ({launched})"
        f.evidence["op_class"] = str(cls)
        known = fix(row, cls)
        if known is not None and not no_counters:  # the class's fix before the catalogue's
            f.next = [known, *(s for s in f.next if s.action not in _GENERIC)]
        for col in ("time_share_pct", "step_share_pct", "launches", "launches_per_step",
                    "device_mean_ms", "device_p95_ms", "range", "kernel_name"):  # fmt: skip
            if row.get(col) is not None:
                f.evidence[col] = row[col]
        report.findings.append(f)
        found[str(row["case"])] = f
    if rows:
        text = headline(rows, found, run.manifest)
        report.notes[str(rows[0]["kernel"])] = "\n".join([text, *op_table(rows, run.manifest)])
    return report


# the catalogue's steps for library code in general, which a class's own fix replaces
_GENERIC = (Action.FUSE, Action.FEWER_BYTES, Action.LIBRARY_SHAPES)


def op_table(rows: list[dict], manifest: Mapping) -> list[str]:
    """The step's time per op class, one line each, largest first: share of the step (run alone,
    where the pace pass timed it), device ms, launches and groups per step; then the GPU's idle
    share."""
    region = manifest.get("region") or {}
    steps = int(region.get("steps_measured") or 0) or 1
    gap, _, scale = _idle(manifest)
    totals: dict[OpClass, list[float]] = {}
    for row in rows:
        t = totals.setdefault(op_class(row), [0.0, 0.0, 0.0, 0])
        t[0] += _share(row) * scale
        t[1] += (num(row, "total_ms") or 0.0) / steps
        t[2] += num(row, "launches_per_step") or 0.0
        t[3] += 1
    where = "of the step" if region.get("steps_measured") else "of the GPU time"
    head = f"{where:>12}{'device ms':>11}{'launches':>10}{'groups':>8}"
    lines = [f"  {'op class (per step)':<22}{head}"]
    for cls, (pct, ms, n, groups) in sorted(totals.items(), key=lambda kv: -kv[1][0]):
        lines.append(f"  {str(cls):<22}{pct:11.1f}%{ms:11.3f}{n:10.0f}{groups:8d}")
    if gap is not None:
        lines.append(f"  {'GPU idle (host gaps)':<22}{gap:11.1f}%")
    return lines


def explained(run: Run, rows: list[dict]) -> list[dict]:
    """The groups explained one by one: those the counter pass profiled; in a timing-only run,
    the top --top. The others are in cases.csv, and in the headline's shares."""
    groups = set((run.manifest.get("counters") or {}).get("groups") or [])
    if groups and not run.timing_only:
        return [r for r in rows if r["case"] in groups]
    top = int((run.manifest.get("options") or {}).get("top") or 10)
    return rows[:top]


def kind_of(row: Mapping) -> str:
    """The group's kernel kind (the one rule, on its record); torch.compile's generated kernels
    are one bucket, whatever they fuse: their lever is the compiler's, not the kind's."""
    rec = LaunchRecord.of(row, family(str(row.get("kernel_name") or "")))
    if rec.owner == Owner.INDUCTOR:
        return "torch.compile (Triton)"
    return _LABELS.get(rec.kind, str(rec.kind))


def headline(rows: list[dict], found: Mapping[str, Finding], manifest: Mapping) -> str:
    """Where the step goes: the GPU's idle share first when it is the largest part, then the two
    op classes (op_class) holding most of the step, each with its busiest unit and the first step
    for its largest explained group."""
    buckets: dict[str, list[tuple[dict, Finding | None]]] = {}
    for row in rows:
        buckets.setdefault(str(op_class(row)), []).append((row, found.get(str(row["case"]))))
    region = manifest.get("region") or {}
    where = "the step" if region.get("steps_measured") else "the program's GPU time"
    gap, under, scale = _idle(manifest)

    def share(row: Mapping) -> float:
        return _share(row) * scale

    ranked = sorted(buckets.items(), key=lambda kv: -sum(share(r) for r, _ in kv[1]))
    said = []
    first = sum(share(r) for r, _ in ranked[0][1]) if ranked else 0.0
    if gap is not None and gap > first:
        said.append(
            f"the GPU is idle {gap:.0f}% of {where} (host gaps{under}): "
            f"{advice_text(Advice(Action.CUDA_GRAPH, ['host_gap_pct']))}"
        )
    for kind, members in ranked[:HEADLINE_BUCKETS]:
        share_pct = sum(share(r) for r, _ in members)
        per_step = round(sum(num(r, "launches_per_step") or 0 for r, _ in members))
        what = f"{_count(per_step, f'{kind} launch')} per step ({_count(len(members), 'group')})"
        lead = f"{share_pct:.0f}% of {where} is in" if not said else f"{share_pct:.0f}% is in"
        if len(said) == 1 + (gap is not None and gap > first):
            lead = f"the next {share_pct:.0f}% is in"
        text = f"{lead} {what}"
        busy = _busiest(members)
        if busy:
            profiled = sum(f is not None and f.unit is not None for _, f in members)
            text += f" at {busy}"
            if profiled < len(members):
                text += f" ({profiled} of them profiled)"
        advised = [(r, f) for r, f in members if f is not None and f.next]
        if advised:
            text += f": {advice_text(max(advised, key=lambda m: _share(m[0]))[1].next[0])}"
        said.append(text)
    text = "; ".join(said)
    text = text[:1].upper() + text[1:] + "."
    if gap is not None and gap <= first:
        text += f" GPU idle (host gaps{under}): {gap:.0f}% of {where}."
    if region.get("steps_measured"):
        text += (
            f" Measured: {region['steps_measured']} step(s), after {region['steps_skipped']} "
            "warm-up step(s)."
        )
    paced = manifest.get("pace") or {}
    return text + _pace_text(paced) + _cost(manifest.get("counters") or {}, paced)


def _idle(manifest: Mapping) -> tuple[float | None, str, float]:
    """(the GPU's idle share of a step, what it was under the profiler as a phrase, the factor
    from a group's share of the profiled step to its share of the step run alone): the pace
    pass's where it timed the step, else the timing pass's own."""
    region = manifest.get("region") or {}
    step = pace.step_ms(manifest)
    if step is None or not region.get("span_ms") or not region.get("steps_measured"):
        return region.get("host_gap_pct"), "", 1.0
    scale = region["span_ms"] / region["steps_measured"] / step
    block = manifest["pace"]
    return (
        block["gpu_idle_pct"],
        f"; {block['profiled_gpu_idle_pct']:.0f}% under the profiler",
        scale,
    )


def _pace_text(block: Mapping) -> str:
    if block.get("status") == "ok":
        alone, profiled = block["period_ms"], block["profiled_period_ms"]
        return (
            f" A step takes {alone:.3f} ms run alone, {profiled:.3f} ms under the profiler (pace "
            "pass: host clock between step starts)."
        )
    if block.get("status") == "failed":
        return f" Pace pass: {block['reason']}; the idle share is the profiled run's."
    return ""


def _cost(counters: Mapping, paced: Mapping) -> str:
    """The counter pass's cost, as the run recorded it, and against the program's own run time
    where the pace pass ran the program plainly (issue 33's goal: at most 2x)."""
    if counters.get("status") != "ok" or counters.get("kernels_profiled") is None:
        return ""
    groups = len(counters.get("groups") or [])
    profiled = _count(int(counters["kernels_profiled"]), "launch")
    # since session 12 the stall reasons are PC samples' shares, not the stall counters
    sampled = SAMPLE_COUNT in (counters.get("metrics") or [])
    how = ", stall reasons sampled" if sampled else ""
    secs = float(counters.get("wall_s") or 0)
    wall = f"({counters.get('passes')} passes{how}) in {secs:.1f} s"
    alone = num(paced, "child_wall_s")
    if alone:
        wall += pace.against_plain(secs, alone) + f" in the pace pass ({alone:.1f} s)"
    if counters.get("program_stopped"):  # the program ended after its last profiled call
        wall += ", the program stopped after the last"
    top = _count(groups, "group")
    if counters.get("launches_used") is None:  # a run from before the gate (issue 33)
        return f" Counter pass: ncu profiled {profiled} for the top {top} {wall}."
    return (
        f" Counter pass: ncu profiled {profiled} to use {counters['launches_used']} (the top "
        f"{top}, {counters.get('selection')} selection) {wall}."
    )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "es" if noun.endswith("h") else "s")


def _share(row: Mapping) -> float:
    return num(row, "step_share_pct") or 0.0


def _busiest(members: list[tuple[dict, Finding | None]]) -> str | None:
    """The unit holding most of the explained members' time, with its time-weighted busy
    percentage."""
    time: dict[Unit, float] = {}
    for row, f in members:
        if f is not None and f.unit in _UNIT_METRIC:
            time[f.unit] = time.get(f.unit, 0.0) + _share(row)
    if not time:
        return None
    unit = max(time, key=lambda u: time[u])
    col, name = _UNIT_METRIC[unit]
    pairs = [(num(r, col), _share(r)) for r, f in members if f is not None and f.unit == unit]
    pairs = [(v, w) for v, w in pairs if v is not None]
    if not pairs or not sum(w for _, w in pairs):
        return None
    value = sum(v * w for v, w in pairs) / sum(w for _, w in pairs)
    return f"{value:.0f}% {name}"
