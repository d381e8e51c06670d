"""Findings, verdicts and next steps from a stored run's latencies and counters.

Pure pandas and Python (no torch, no GPU), so `profkit explain` runs anywhere on stored runs. The
bottleneck logic follows Nsight Compute's SpeedOfLight rule and goes further where counters allow;
every threshold lives in `profkit.thresholds`. Every number a finding's text quotes is recorded in
its `evidence` first (`_Evidence.q` records and formats in one step), so each figure can be traced
to a row of the stored run.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import NamedTuple

import pandas as pd

from profkit import thresholds as th
from profkit.store import Run

# NVIDIA rule results worth quoting: OK results say nothing is wrong; ERROR ones are rule failures.
QUOTED_RULE_TYPES = ("WARNING", "OPTIMIZATION")


@dataclass
class Finding:
    # "rmsnorm triton float16 4096x8192" (case), "rmsnorm" (verdict), a kernel name (launch)
    subject: str
    kind: str  # case | verdict | launch
    kernel: str
    bottleneck: str | None = None  # memory | compute | latency | balanced
    verdict: str | None = None  # win | active track | not a win (kind "verdict" only)
    evidence: dict[str, float | int | str] = field(default_factory=dict)
    text: str = ""
    next_step: str | None = None
    nvidia_rules: list[str] = field(default_factory=list)
    variant: str | None = None
    case: str | None = None  # the case (NVTX range) name: the row of cases.csv/kernels.csv

    def to_dict(self) -> dict:
        out = asdict(self)
        out["evidence"] = {k: _plain(v) for k, v in self.evidence.items()}
        return out


# --- numbers: formatting and evidence -------------------------------------------------------------


def _plain(value: object) -> object:
    """numpy scalars to Python ones, NaN to None: evidence must survive json.dumps."""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _sig(value: float, digits: int = 3) -> str:
    """`digits` significant figures, never scientific notation: 0.0342, 1.1, 165."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    text = f"{value:.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _bytes(value: float) -> str:
    for scale, unit in ((1e9, "GB"), (1e6, "MB"), (1e3, "KB")):
        if abs(value) >= scale:
            return f"{value / scale:.1f} {unit}"
    return f"{value:.0f} B"


# Key suffix -> formatter; the first match wins, so specific suffixes come first.
_FORMATS: tuple[tuple[str, Callable[[float], str]], ...] = (
    ("pct_peak_bw", lambda v: f"{v:.1f}%"),
    ("pct_peak_flops", lambda v: f"{v:.1f}%"),
    ("_pct", lambda v: f"{v:.1f}%"),
    ("_ms", lambda v: f"{_sig(v)} ms"),
    ("bytes", _bytes),
    ("_gbps", lambda v: f"{v:.0f} GB/s"),
    ("_tflops", lambda v: f"{_sig(v)} TFLOP/s"),
    ("flop_per_byte", lambda v: f"{_sig(v)} FLOP/B"),
    ("_x", lambda v: f"{v:.1f}x"),
)


def format_value(key: str, value: object) -> str:
    """How a finding's text writes evidence[key]: the unit follows from the key's suffix."""
    if isinstance(value, str):
        return value
    for suffix, fmt in _FORMATS:
        if key.endswith(suffix):
            return fmt(float(value))
    if isinstance(value, int):
        return str(value)
    return _sig(float(value))


class _Evidence(dict):
    def q(self, key: str, value: object) -> str:
        """Record a number under key and return it as the text quotes it."""
        self[key] = _plain(value)
        return format_value(key, self[key])

    def q_abs(self, key: str, value: float) -> str:
        """Record a signed number but quote its size: the text says "faster"/"slower" in words."""
        self[key] = _plain(value)
        return format_value(key, abs(value))


def _num(row: Mapping, key: str) -> float | None:
    try:
        value = float(row.get(key))
    except (TypeError, ValueError):
        return None
    return None if math.isnan(value) else value


def _text(row: Mapping, key: str) -> str | None:
    value = row.get(key)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return str(value).strip() or None


def as_bool(value: object) -> bool:
    """A bool cell of a stored table: CSV gives bool, or text once the column holds empty cells."""
    return str(value).strip().lower() in ("true", "1", "1.0")


def _count(n: float, word: str) -> str:
    return word if n == 1 else f"{word}s"


# --- timing ----------------------------------------------------------------------------------


def timing_outcome(
    ms: float, ref_ms: float, spread_ms: float | None, ref_spread_ms: float | None
) -> str:
    """Whether ms is "faster" or "slower" than ref_ms beyond the larger spread, else "noise"."""
    spreads = [s for s in (spread_ms, ref_spread_ms) if s is not None and not math.isnan(s)]
    noise = max(spreads, default=0.0) * th.NOISE_SPREAD_MULTIPLE
    delta = ms - ref_ms
    if abs(delta) <= noise:
        return "noise"
    return "faster" if delta < 0 else "slower"


# --- bottleneck: the speed-of-light decision and what the counters add ----------------------------


def classify(memory_pct: float, sm_pct: float) -> str:
    """Nsight Compute's SOLBottleneck decision: memory, compute, latency or balanced."""
    if memory_pct >= th.HIGH_THROUGHPUT_PCT or sm_pct >= th.HIGH_THROUGHPUT_PCT:
        return "compute" if sm_pct >= memory_pct else "memory"  # ncu breaks the tie to compute
    if memory_pct < th.LATENCY_BOUND_PCT and sm_pct < th.LATENCY_BOUND_PCT:
        return "latency"
    # counters carry float noise (65.3 - 55.3 = 9.99...): compare the gap at micro-point resolution
    if round(abs(sm_pct - memory_pct), 6) >= th.SOL_GAP_PCT:
        return "compute" if sm_pct > memory_pct else "memory"
    return "balanced"


class _Said(NamedTuple):
    """What a rule found (one or more sentences) and the next step it points to."""

    text: str
    step: str | None


@dataclass
class _Diagnosis:
    bottleneck: str | None
    text: str
    next_step: str | None


def _diagnose(m: Mapping, ev: _Evidence, min_bytes: float | None) -> _Diagnosis | None:
    has_memory = _num(m, "memory_throughput_pct") is not None
    mem_key = "memory_throughput_pct" if has_memory else "dram_throughput_pct"
    mem, sm = _num(m, mem_key), _num(m, "sm_throughput_pct")
    if mem is None or sm is None:
        return None
    kind = classify(mem, sm)
    mem_q, sm_q = ev.q(mem_key, mem), ev.q("sm_throughput_pct", sm)
    lead = {
        "memory": f"Memory-bound (ncu speed of light): the busiest memory unit runs at {mem_q} "
        f"of peak against {sm_q} for the SM.",
        "compute": f"Compute-bound (ncu speed of light): the SM runs at {sm_q} of peak against "
        f"{mem_q} for memory.",
        "latency": f"Latency-bound (ncu speed of light): SM {sm_q} and memory {mem_q} of peak "
        "are both low, so neither unit is kept busy.",
        "balanced": f"Balanced (ncu speed of light): SM {sm_q} and memory {mem_q} of peak are "
        "close and neither is saturated, so only cutting both the math and the traffic gains much.",
    }[kind]
    detail = _DETAILS[kind](m, ev, min_bytes)
    return _Diagnosis(kind, f"{lead} {detail.text}".strip(), detail.step)


def _memory_detail(m: Mapping, ev: _Evidence, min_bytes: float | None) -> _Said:
    said = _dram_level(m, ev)
    excess = _excess_bytes(m, ev, min_bytes)
    if excess is None:
        return said
    # extra passes are the cheapest bytes to remove, whatever the DRAM level
    return _Said(
        f"{said.text} {excess}".strip(),
        "remove the extra passes over the data first: each one costs a full read from DRAM",
    )


def _dram_level(m: Mapping, ev: _Evidence) -> _Said:
    dram, mem = _num(m, "dram_throughput_pct"), _num(m, "memory_throughput_pct")
    if dram is None:
        return _Said(
            "", "open MemoryWorkloadAnalysis in Nsight Compute to see the busy memory unit"
        )
    level = ev.q("dram_throughput_pct", dram)
    if dram >= th.NEAR_PEAK_DRAM_PCT:
        return _Said(
            f"DRAM runs at {level} of peak, so no launch-configuration change will help: only "
            "moving fewer bytes will.",
            "fuse it with the ops around it or reuse data on chip (fewer DRAM bytes); tuning the "
            "launch will not help",
        )
    if mem is not None and mem - dram >= th.CACHE_BOUND_GAP_PCT:
        return _Said(
            f"DRAM runs at only {level} of peak, well under the busiest memory unit: the pressure "
            "is on L1, L2 or shared memory, not DRAM.",
            "open MemoryWorkloadAnalysis in Nsight Compute for the busy cache level: uncoalesced "
            "or strided access, shared-memory bank conflicts, or L2 misses",
        )
    headroom = ev.q("dram_headroom_pct", 100.0 - dram)
    return _Said(
        f"DRAM runs at {level} of peak, leaving {headroom} of headroom.",
        "get more bytes in flight: wider (vectorised) loads, more warps or blocks per SM, fewer "
        "passes over the data",
    )


def _excess_bytes(m: Mapping, ev: _Evidence, min_bytes: float | None) -> str | None:
    dram_bytes = _num(m, "dram_bytes")
    if dram_bytes is None or not min_bytes or dram_bytes / min_bytes < th.EXCESS_DRAM_BYTES_RATIO:
        return None
    return (
        f"It moves {ev.q('dram_bytes', dram_bytes)} through DRAM, "
        f"{ev.q('dram_over_min_bytes_x', dram_bytes / min_bytes)} the {ev.q('bytes', min_bytes)} "
        "minimum: it makes extra passes over its data."
    )


def _compute_detail(m: Mapping, ev: _Evidence, _min_bytes: float | None) -> _Said:
    tensor = _num(m, "tensor_pipe_pct")
    if tensor is None:
        return _Said(
            "No Tensor Core counter was captured, so which pipe is busy is not known here.",
            "open ComputeWorkloadAnalysis in Nsight Compute to see the busiest pipe",
        )
    busy = ev.q("tensor_pipe_pct", tensor)
    if tensor >= th.TENSOR_BUSY_PCT:
        return _Said(
            f"It is bound on the Tensor Cores, busy {busy} of active cycles: the math already "
            "runs near the hardware's rate.",
            "do less math (lower precision, skip redundant work); launch tuning will not help",
        )
    if tensor < th.TENSOR_IDLE_PCT:
        return _Said(
            f"The Tensor Cores are busy only {busy} of active cycles, so the load is on the "
            "FMA/ALU pipes.",
            "if the math is a matrix product, move it onto the Tensor Cores (tl.dot); otherwise "
            "cut instructions (ComputeWorkloadAnalysis shows the busiest pipe)",
        )
    return _Said(
        f"The Tensor Cores are busy {busy} of active cycles: part of the load sits on other pipes.",
        "keep the Tensor Cores fed (larger tiles, more pipeline stages) and check "
        "ComputeWorkloadAnalysis for the other busy pipe",
    )


def _balanced_detail(_m: Mapping, _ev: _Evidence, _min_bytes: float | None) -> _Said:
    return _Said(
        "",
        "cut both the math and the traffic; Nsight Compute's ComputeWorkloadAnalysis and "
        "MemoryWorkloadAnalysis show where each goes",
    )


def _launch_overhead(m: Mapping, ev: _Evidence) -> _Said | None:
    count, duration = _num(m, "kernel_count"), _num(m, "ncu_duration_ms")
    if count is None or duration is None or count <= 1 or duration / count >= th.SHORT_KERNEL_MS:
        return None
    return _Said(
        f"Launch overhead: it launches {ev.q('kernel_count', int(count))} kernels averaging "
        f"{ev.q('mean_kernel_ms', duration / count)} each, about what a launch costs, so "
        "launches rather than the GPU set the pace.",
        "fuse the kernels into one (or capture them in a CUDA graph) to pay for one launch "
        "instead of many",
    )


def _small_grid(m: Mapping, ev: _Evidence) -> _Said | None:
    waves, grid = _num(m, "waves_per_sm"), _num(m, "grid_size")
    if waves is None or waves >= th.SMALL_GRID_WAVES:
        return None
    blocks = f"its {ev.q('grid_size', int(grid))} blocks fill" if grid is not None else "it fills"
    return _Said(
        f"Small grid: {blocks} only {ev.q('waves_per_sm', waves)} of one wave, so some SMs get "
        "no work.",
        "launch more, smaller programs (split rows or the reduction across programs) so every SM "
        "gets work",
    )


def _tail_effect(m: Mapping, ev: _Evidence) -> _Said | None:
    waves = _num(m, "waves_per_sm")
    if waves is None or waves < th.SMALL_GRID_WAVES:
        return None
    slots = math.ceil(round(waves, 6))  # 2.0000001 waves is two whole waves, not three
    idle = (slots - waves) / slots
    if idle < th.TAIL_IDLE_SHARE:
        return None
    fill = ev.q("last_wave_fill_pct", round((waves - slots + 1) * 100, 2))
    return _Said(
        f"Tail effect: {ev.q('waves_per_sm', waves)} waves, so the last wave is only {fill} full "
        f"and {ev.q('tail_idle_pct', round(idle * 100, 2))} of the launch's block slots sit idle.",
        "size the grid (or the work per program) so the waves come out whole, or just under a "
        "whole number",
    )


def _low_occupancy(m: Mapping, ev: _Evidence) -> _Said | None:
    achieved = _num(m, "achieved_occupancy_pct")
    theoretical = _num(m, "theoretical_occupancy_pct")
    if achieved is None or theoretical is None:
        return None
    if achieved < th.LOW_OCCUPANCY_RATIO * theoretical:
        return _Said(
            f"Low occupancy: {ev.q('achieved_occupancy_pct', achieved)} achieved against "
            f"{ev.q('theoretical_occupancy_pct', theoretical)} theoretical, so most of the warps "
            "the launch allows are missing (imbalance between blocks or warps, or a tail).",
            "balance the work across programs and warps; ncu's Occupancy and SchedulerStats "
            "sections show where warps go missing",
        )
    if theoretical < th.LOW_THEORETICAL_OCCUPANCY_PCT:
        return _Said(
            "Low occupancy: the launch allows only "
            f"{ev.q('theoretical_occupancy_pct', theoretical)} theoretical occupancy, capped by "
            "registers or shared memory per block.",
            "cut registers or shared memory per block (smaller tiles, fewer stages, other "
            "num_warps) to fit more warps per SM",
        )
    return None


def _short_kernel(m: Mapping, ev: _Evidence) -> _Said | None:
    count, duration = _num(m, "kernel_count"), _num(m, "ncu_duration_ms")
    if duration is None or (count is not None and count > 1) or duration >= th.SHORT_KERNEL_MS:
        return None
    return _Said(
        f"Short kernel: at {ev.q('ncu_duration_ms', duration)} it is about as short as a launch "
        "costs, so back to back with other kernels, launch overhead sets its pace.",
        "fuse it with the kernels around it or capture the sequence in a CUDA graph",
    )


# Most specific first: the first cause found gives the next step.
_CAUSES = (_launch_overhead, _small_grid, _tail_effect, _low_occupancy, _short_kernel)


def _latency_detail(m: Mapping, ev: _Evidence, _min_bytes: float | None) -> _Said:
    found = [said for said in (check(m, ev) for check in _CAUSES) if said]
    if not found:
        return _Said(
            "No launch-shape or occupancy cause shows in these counters.",
            "profile with ncu --section WarpStateStats --section SchedulerStats to see what the "
            "warps wait on",
        )
    return _Said(" ".join(said.text for said in found), found[0].step)


_DETAILS: dict[str, Callable[[Mapping, _Evidence, float | None], _Said]] = {
    "memory": _memory_detail,
    "compute": _compute_detail,
    "latency": _latency_detail,
    "balanced": _balanced_detail,
}


# --- position against the measured ceilings -----------------------------------------------------


def _ceiling_values(ceilings: Mapping) -> tuple[float, float] | None:
    bw, peak = _num(ceilings, "copy_gbps"), _num(ceilings, "matmul_tflops")
    return (bw, peak) if bw and peak and bw > 0 and peak > 0 else None


def _roofline(ev: _Evidence, row: Mapping, ceilings: Mapping) -> str | None:
    """Arithmetic intensity against the ridge point, and the share of the roofline reached.

    achieved / min(peak, AI * bandwidth) equals max(flops / peak, bytes / bandwidth) / time: the
    second form also holds for kernels with no FLOPs (a copy)."""
    limits = _ceiling_values(ceilings)
    flops, min_bytes, ms = _num(row, "flops"), _num(row, "bytes"), _num(row, "p50_ms")
    if limits is None or flops is None or not min_bytes or not ms:
        return None
    bw, peak = limits
    ai, ridge = flops / min_bytes, peak * 1e12 / (bw * 1e9)
    bound_s = max(flops / (peak * 1e12), min_bytes / (bw * 1e9))
    side, roof = ("under", "the copy bandwidth") if ai < ridge else ("over", "the matmul rate")
    return (
        f"Arithmetic intensity {ev.q('arithmetic_intensity_flop_per_byte', ai)} is {side} the "
        f"ridge point at {ev.q('ridge_flop_per_byte', ridge)} of the measured ceilings "
        f"({ev.q('copy_gbps', bw)}, {ev.q('matmul_tflops', peak)}), so its roof is {roof}; it "
        f"reaches {ev.q('roofline_pct', bound_s / (ms * 1e-3) * 100)} of that roof."
    )


def _launch_bandwidth(ev: _Evidence, row: Mapping, ceilings: Mapping) -> str | None:
    """A launch has no spec bytes or FLOPs: its measured DRAM traffic against the copy ceiling."""
    dram_bytes, ms = _num(row, "dram_bytes"), _num(row, "ncu_duration_ms")
    limits = _ceiling_values(ceilings)
    if dram_bytes is None or not ms or limits is None:
        return None
    gbps = dram_bytes / (ms * 1e-3) / 1e9
    return (
        f"It moves {ev.q('dram_gbps', gbps)} through DRAM, "
        f"{ev.q('copy_ceiling_pct', gbps / limits[0] * 100)} of the measured copy ceiling "
        f"({ev.q('copy_gbps', limits[0])})."
    )


# --- NVIDIA's own rule messages ------------------------------------------------------------------


def _clean_rule_message(message: str) -> str:
    """Drop ncu's link markup: "@section:LaunchStats:Launch Statistics@" -> "Launch Statistics"."""
    message = re.sub(r"@section:[^:@]+:([^@]+)@", r"\1", message)
    message = re.sub(r"@url:([^:@]+):([^@]+)@", r"\1 (\2)", message)
    return " ".join(message.split())


def _quoted_rules(
    rules: pd.DataFrame | None, column: str, match: Callable[[pd.Series], pd.Series]
) -> list[str]:
    """NVIDIA's WARNING/OPTIMIZATION messages for the rows of `rules` where match(rules[column])."""
    if rules is None or rules.empty or column not in rules or "type" not in rules:
        return []
    wanted = rules["type"].astype(str).str.upper().isin(QUOTED_RULE_TYPES) & match(rules[column])
    quoted: list[str] = []
    for rule in rules[wanted].to_dict("records"):
        message = _clean_rule_message(_text(rule, "message") or "")
        text = f"{_text(rule, 'rule') or 'NVIDIA'}: {message}"
        speedup = _num(rule, "speedup_pct")
        if speedup:
            text += f" (NVIDIA's estimated speedup: {_sig(speedup)}%)"
        if text not in quoted:  # a case of several launches repeats the same message per launch
            quoted.append(text)
    return quoted


def _rules_for_case(rules: pd.DataFrame | None, case: str | None) -> list[str]:
    return [] if case is None else _quoted_rules(rules, "case", lambda col: col.astype(str) == case)


def _rules_for_launch(rules: pd.DataFrame | None, launch: float | None) -> list[str]:
    if launch is None:
        return []
    return _quoted_rules(rules, "launch", lambda col: pd.to_numeric(col, errors="coerce") == launch)


# --- per case -------------------------------------------------------------------------------------


@dataclass
class _RunContext:
    ceilings: Mapping
    no_counters: str | None  # why the whole run has no counters, None when it has them
    fix: str | None
    rules: pd.DataFrame | None

    @classmethod
    def of(cls, run: Run) -> _RunContext:
        counters = run.manifest.get("counters") or {}
        reason = None
        if run.timing_only:
            reason = (
                counters.get("reason") or f"counters status: {counters.get('status', 'unknown')}"
            )
        return cls(
            run.manifest.get("ceilings") or {}, reason, counters.get("fix") or None, run.rules
        )


def _has_counters(row: Mapping) -> bool:
    memory = (
        _num(row, "memory_throughput_pct") is not None
        or _num(row, "dram_throughput_pct") is not None
    )
    return memory and _num(row, "sm_throughput_pct") is not None


def _timed(row: Mapping) -> bool:
    return as_bool(row.get("correct")) and _num(row, "p50_ms") is not None


def _case_finding(row: Mapping, ctx: _RunContext) -> Finding:
    ev = _Evidence()
    kernel, variant = str(row["kernel"]), str(row["variant"])
    finding = Finding(
        subject=f"{kernel} {variant} {row['dtype']} {row['shape']}",
        kind="case",
        kernel=kernel,
        variant=variant,
        case=_text(row, "case"),
    )
    if not _timed(row):
        failure = _failure(row, ev)  # not str.capitalize(): it lowercases the error text
        finding.text = f"{failure[0].upper()}{failure[1:]}, so its speed is not judged."
        finding.next_step = "fix correctness first"
    else:
        reason = ctx.no_counters or (
            None if _has_counters(row) else "no counters were captured for this case"
        )
        diagnosis = (
            _timing_only(row, ev, reason, ctx.fix)
            if reason
            else _diagnose(row, ev, _num(row, "bytes"))
        )
        sentences = [_timing_sentence(row, ev), diagnosis.text, _roofline(ev, row, ctx.ceilings)]
        finding.text = " ".join(s for s in sentences if s)
        finding.bottleneck, finding.next_step = diagnosis.bottleneck, diagnosis.next_step
        finding.nvidia_rules = _rules_for_case(ctx.rules, finding.case)
    finding.evidence = dict(ev)
    return finding


def _failure(row: Mapping, ev: _Evidence, prefix: str = "") -> str:
    """Why a case has no judged timing: incorrect, or (rarely) correct but untimed."""
    if as_bool(row.get("correct")):
        what, error = "not timed", _text(row, "error") or "no latency was recorded"
    else:
        what, error = "incorrect", _text(row, "error") or "the output does not match the reference"
    detail = ev.q(f"{prefix}error", error)
    rel_err = _num(row, "rel_err")
    if rel_err is not None:
        detail += f", rel_err {ev.q(f'{prefix}rel_err', rel_err)}"
    return f"{what} ({detail})"


def _timing_sentence(row: Mapping, ev: _Evidence) -> str:
    text = f"p50 {ev.q('p50_ms', _num(row, 'p50_ms'))}"
    spread = _num(row, "spread_ms")
    if spread is not None:
        text += f" (spread {ev.q('spread_ms', spread)})"
    pct_bw = _num(row, "pct_peak_bw")
    if pct_bw is not None:
        text += f", {ev.q('pct_peak_bw', pct_bw)} of the measured copy bandwidth"
    return text + "."


def _timing_only(row: Mapping, ev: _Evidence, reason: str, fix: str | None) -> _Diagnosis:
    """Without counters, claim only what timing supports: the share of the copy bandwidth."""
    reason_q = ev.q("counters_reason", reason)
    text = f"Timing only ({reason_q}): without counters no bottleneck is claimed."
    pct_bw = _num(row, "pct_peak_bw")
    if pct_bw is not None and pct_bw >= th.NEAR_COPY_CEILING_PCT:
        text += (
            f" At {ev.q('pct_peak_bw', pct_bw)} of the measured copy bandwidth it already moves "
            "its minimum bytes about as fast as a device copy: only fewer bytes can make it faster."
        )
        return _Diagnosis(
            None, text, "move fewer bytes (fuse it with its neighbours or reuse data)"
        )
    return _Diagnosis(
        None, text, "capture counters to see what limits it" + (f": {fix}" if fix else "")
    )


# --- per kernel: the verdict ---------------------------------------------------------------------


@dataclass
class _Comparison:
    dtype: str
    shape: str
    baseline: str
    delta_ms: float  # lab - baseline: negative is faster
    delta_pct: float
    spread_ms: float
    outcome: str  # faster | slower | noise

    @property
    def where(self) -> str:
        return f"{self.dtype} {self.shape}"

    @property
    def key(self) -> str:
        return f"{self.where} vs {self.baseline}"


def _compare(lab: Mapping, base: Mapping) -> _Comparison:
    lab_ms, base_ms = _num(lab, "p50_ms"), _num(base, "p50_ms")
    lab_spread, base_spread = _num(lab, "spread_ms"), _num(base, "spread_ms")
    delta = lab_ms - base_ms
    return _Comparison(
        dtype=str(lab["dtype"]),
        shape=str(lab["shape"]),
        baseline=str(base["variant"]),
        delta_ms=delta,
        delta_pct=delta / base_ms * 100,
        spread_ms=max(lab_spread or 0.0, base_spread or 0.0),
        outcome=timing_outcome(lab_ms, base_ms, lab_spread, base_spread),
    )


def _comparisons(lab_rows: list[dict], base_rows: list[dict], ev: _Evidence) -> list[_Comparison]:
    """Each lab case against each baseline timed at the same dtype and shape."""
    out = []
    for lab in lab_rows:
        for base in base_rows:
            if (base["dtype"], base["shape"]) == (lab["dtype"], lab["shape"]) and _timed(base):
                c = _compare(lab, base)
                ev[f"{c.key}: delta_ms"], ev[f"{c.key}: delta_pct"] = c.delta_ms, c.delta_pct
                ev[f"{c.key}: outcome"] = c.outcome
                out.append(c)
    return out


def _margin(ev: _Evidence, c: _Comparison) -> str:
    """A margin quoted as a size; evidence keeps the signed values (lab - baseline)."""
    ms = ev.q_abs(f"{c.key}: delta_ms", c.delta_ms)
    return f"{ms} ({ev.q_abs(f'{c.key}: delta_pct', c.delta_pct)})"


def _verdicts(
    kernel: str, rows: list[dict], case_findings: list[Finding], ctx: _RunContext
) -> list[Finding]:
    lab = [r for r in rows if not as_bool(r.get("baseline"))]
    base = [r for r in rows if as_bool(r.get("baseline"))]
    variants = list(dict.fromkeys(str(r["variant"]) for r in lab))
    # the next step a verdict gives comes from the counters of the case where it loses most
    steps = {
        (str(r["variant"]), f"{r['dtype']} {r['shape']}"): f.next_step
        for r, f in zip(rows, case_findings, strict=True)
    }
    return [
        _verdict(
            kernel,
            v,
            [r for r in lab if str(r["variant"]) == v],
            base,
            steps,
            ctx,
            len(variants) > 1,
        )
        for v in variants
    ]


def _verdict(
    kernel: str,
    variant: str,
    lab: list[dict],
    base: list[dict],
    steps: dict,
    ctx: _RunContext,
    several: bool,
) -> Finding:
    ev = _Evidence()
    finding = Finding(
        subject=f"{kernel} {variant}" if several else kernel,
        kind="verdict",
        kernel=kernel,
        variant=variant,
    )
    failed = [r for r in lab if not _timed(r)]
    comparisons = [] if failed else _comparisons(lab, base, ev)
    if failed:
        finding.verdict, finding.text, finding.next_step = _incorrect_verdict(variant, failed, ev)
    elif not comparisons:
        finding.text = (
            f"{variant} has no baseline timed at the same dtype and shape, so there is no verdict."
        )
    else:
        finding.verdict, finding.text, finding.next_step = _judge(variant, comparisons, steps, ev)
        finding.text += (
            _uncompared(lab, comparisons, ev) + " " + _counter_sentence(lab, base, ev, ctx)
        )
    finding.evidence = dict(ev)
    return finding


def _uncompared(lab: list[dict], comparisons: list[_Comparison], ev: _Evidence) -> str:
    """Lab cases with no baseline timed beside them: the verdict says nothing about those."""
    compared = {c.where for c in comparisons}
    missing = [w for w in (f"{r['dtype']} {r['shape']}" for r in lab) if w not in compared]
    if not missing:
        return ""
    places = ev.q("not_compared", ", ".join(missing))
    return f" No baseline was timed at {places}, so it is not judged there."


def _incorrect_verdict(variant: str, failed: list[dict], ev: _Evidence) -> tuple[str, str, str]:
    places = []
    for row in failed:
        where = f"{row['dtype']} {row['shape']}"
        places.append(f"at {where} it is {_failure(row, ev, f'{where}: ')}")
    text = (
        f"{variant} is not a win: an incorrect variant never counts as fast, and "
        + "; ".join(places)
        + "."
    )
    first = failed[0]
    return "not a win", text, f"fix correctness at {first['dtype']} {first['shape']} first"


def _judge(
    variant: str, comparisons: list[_Comparison], steps: dict, ev: _Evidence
) -> tuple[str, str, str | None]:
    if all(c.outcome == "faster" for c in comparisons):
        return "win", _win_text(variant, comparisons, ev), None
    places = list(dict.fromkeys(c.where for c in comparisons))
    if all(any(c.outcome == "slower" for c in comparisons if c.where == p) for p in places):
        return _not_a_win(variant, comparisons, places, steps, ev)
    return _active_track(variant, comparisons, steps, ev)


def _win_text(variant: str, comparisons: list[_Comparison], ev: _Evidence) -> str:
    baselines = " and ".join(dict.fromkeys(c.baseline for c in comparisons))
    places = ev.q("cases_compared", len({c.where for c in comparisons}))
    closest = min(comparisons, key=lambda c: abs(c.delta_pct))
    widest = max(comparisons, key=lambda c: abs(c.delta_pct))
    text = (
        f"{variant} is a win: correct everywhere and faster than {baselines} in {places} of "
        f"{places} dtype/shape cases compared, beyond the timing spread. The smallest margin is "
        f"{_margin(ev, closest)} against {closest.baseline} at {closest.where}"
    )
    if widest is not closest:
        text += f"; the largest {_margin(ev, widest)} against {widest.baseline} at {widest.where}"
    return text + "."


def _worst(comparisons: list[_Comparison]) -> _Comparison:
    return max(comparisons, key=lambda c: c.delta_pct)


def _next_at(c: _Comparison, variant: str, steps: dict) -> str | None:
    step = steps.get((variant, c.where))
    return f"at {c.where}: {step}" if step else None


def _not_a_win(
    variant: str, comparisons: list[_Comparison], places: list[str], steps: dict, ev: _Evidence
) -> tuple[str, str, str | None]:
    losses = [_worst([c for c in comparisons if c.where == p]) for p in places]
    listed = "; ".join(f"{c.baseline} at {c.where} by {_margin(ev, c)}" for c in losses)
    text = f"{variant} is not a win: a baseline beats it at every dtype/shape ({listed})."
    return "not a win", text, _next_at(_worst(losses), variant, steps)


def _active_track(
    variant: str, comparisons: list[_Comparison], steps: dict, ev: _Evidence
) -> tuple[str, str, str | None]:
    losses = [c for c in comparisons if c.outcome == "slower"]
    ties = [c for c in comparisons if c.outcome == "noise"]
    faster = ev.q("comparisons_faster", sum(c.outcome == "faster" for c in comparisons))
    text = (
        f"{variant} is an active track: correct everywhere and faster in {faster} of "
        f"{ev.q('comparisons', len(comparisons))} baseline comparisons, but not everywhere."
    )
    if losses:
        text += (
            " It loses to "
            + "; ".join(f"{c.baseline} at {c.where} by {_margin(ev, c)}" for c in losses)
            + "."
        )
    if ties:
        text += " It ties within noise with " + "; ".join(_tie(ev, c) for c in ties) + "."
    return "active track", text, _next_at(_worst(losses or ties), variant, steps)


def _tie(ev: _Evidence, c: _Comparison) -> str:
    side = "slower" if c.delta_ms > 0 else "faster"
    spread = ev.q(f"{c.key}: spread_ms", c.spread_ms)
    return f"{c.baseline} at {c.where}: {_margin(ev, c)} {side}, within the {spread} spread"


def _representative(rows: list[dict]) -> dict:
    """The lab case whose counters explain the verdict: the largest (most bytes, then slowest)."""
    return max(rows, key=lambda r: (_num(r, "bytes") or 0.0, _num(r, "p50_ms") or 0.0))


def _counter_sentence(lab: list[dict], base: list[dict], ev: _Evidence, ctx: _RunContext) -> str:
    """What the counters say about the margin: kernels and DRAM traffic side by side (fusion)."""
    rep = _representative(lab)
    if ctx.no_counters or not _has_counters(rep):
        reason = ctx.no_counters or "no counters were captured for this case"
        return f"Timing only ({ev.q('counters_reason', reason)}): no counters show why."
    where = f"{rep['dtype']} {rep['shape']}"
    text = f"At {where} it launches {_kernels_and_bytes(rep, where, ev)}"
    dram = _num(rep, "dram_throughput_pct")
    if dram is not None:
        key = f"{where} {rep['variant']}: dram_throughput_pct"
        text += f", at {ev.q(key, dram)} of DRAM peak"
    fused = [
        b
        for b in base
        if (b["dtype"], b["shape"]) == (rep["dtype"], rep["shape"])
        and (_num(b, "kernel_count") or 0) > 1
    ]
    for b in fused:
        text += f"; {b['variant']} launches {_kernels_and_bytes(b, where, ev)}"
    return text + "."


def _kernels_and_bytes(row: Mapping, where: str, ev: _Evidence) -> str:
    prefix = f"{where} {row['variant']}: "
    count, dram_bytes = _num(row, "kernel_count"), _num(row, "dram_bytes")
    text = (
        f"{ev.q(prefix + 'kernel_count', int(count))} {_count(count, 'kernel')}"
        if count is not None
        else "its kernels"
    )
    if dram_bytes is not None:
        text += f" moving {ev.q(prefix + 'dram_bytes', dram_bytes)} through DRAM"
    return text


# --- public entry points -------------------------------------------------------------------------


def explain_run(run: Run) -> list[Finding]:
    """Per kernel: one verdict per lab variant first, then one finding per case."""
    ctx = _RunContext.of(run)
    cases = run.cases.astype({"dtype": str, "shape": str, "variant": str, "kernel": str})
    findings: list[Finding] = []
    for kernel, group in cases.groupby("kernel", sort=False):
        rows = group.to_dict("records")
        case_findings = [_case_finding(r, ctx) for r in rows]
        findings += _verdicts(str(kernel), rows, case_findings, ctx) + case_findings
    return findings


def explain_launches(
    kernels: pd.DataFrame, rules: pd.DataFrame | None, ceilings: dict | None = None
) -> list[Finding]:
    """One finding per kernel launch of a report (kernels.csv-like: counters, no timing)."""
    return [_launch_finding(row, rules, ceilings or {}) for row in kernels.to_dict("records")]


def _launch_finding(row: Mapping, rules: pd.DataFrame | None, ceilings: Mapping) -> Finding:
    ev = _Evidence()
    name = _text(row, "kernel_name") or "kernel"
    launch = _num(row, "launch")
    if launch is not None:
        ev["launch"] = int(launch)
    diagnosis = _diagnose(row, ev, None) or _Diagnosis(
        None, "No throughput counters were captured for this launch.", None
    )
    duration = _num(row, "ncu_duration_ms")
    lead = ""
    if duration is not None and "ncu_duration_ms" not in ev:  # unless a cause already quoted it
        lead = f"ncu measured {ev.q('ncu_duration_ms', duration)}."
    sentences = [lead, diagnosis.text, _launch_bandwidth(ev, row, ceilings)]
    return Finding(
        subject=name,
        kind="launch",
        kernel=_text(row, "kernel") or name,
        bottleneck=diagnosis.bottleneck,
        evidence=dict(ev),
        text=" ".join(s for s in sentences if s),
        next_step=diagnosis.next_step,
        nvidia_rules=_rules_for_launch(rules, launch),
        variant=_text(row, "variant"),
        case=_text(row, "case"),
    )
