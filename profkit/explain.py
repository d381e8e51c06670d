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


def _pct(value: float) -> str:
    # a share that rounds to 0.0% is still not zero: say "<0.1%" rather than a misleading "0.0%"
    return "<0.1%" if 0 < value < 0.05 else f"{value:.1f}%"


def _bytes(value: float) -> str:
    for scale, unit in ((1e9, "GB"), (1e6, "MB"), (1e3, "KB")):
        if abs(value) >= scale:
            return f"{value / scale:.1f} {unit}"
    return f"{value:.0f} B"


# Key suffix -> formatter; the first match wins, so specific suffixes come first.
_FORMATS: tuple[tuple[str, Callable[[float], str]], ...] = (
    ("pct_peak_bw", _pct),
    ("pct_peak_flops", _pct),
    ("_pct", _pct),
    ("_ms", lambda v: f"{_sig(v)} ms"),
    ("bytes", _bytes),
    ("_gbps", lambda v: f"{v:.0f} GB/s"),
    ("_tflops", lambda v: f"{_sig(v)} TFLOP/s"),
    ("flop_per_byte", lambda v: f"{_sig(v)} FLOP/B"),
    ("_x", lambda v: f"{v:.1f}x"),
)
# Counters that count things: quoted as integers ("512 threads", never "512.0").
_INT_COLUMNS = ("kernel_count", "grid_size", "block_size", "registers_per_thread")


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

    def q_case(self, row: Mapping, col: str) -> str:
        """Quote a column of a named case (the verdict sets cases side by side), recorded under
        "<dtype> <shape> <variant>: <col>"; the caller checks the value is there."""
        value = _num(row, col)
        key = f"{_where(row)} {row['variant']}: {col}"
        return self.q(key, int(value) if col in _INT_COLUMNS else value)


def _num(row: Mapping, key: str) -> float | None:
    try:
        value = float(row.get(key))
    except (TypeError, ValueError):
        return None
    return None if math.isnan(value) else value


def _nums(row: Mapping, *keys: str) -> list[float] | None:
    """Every value, or None when any is missing."""
    values = [_num(row, k) for k in keys]
    return None if any(v is None for v in values) else values


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


def _and(items: list[str]) -> str:
    """Join with commas and a final "and": "a", "a and b", "a, b and c"."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _where(row: Mapping) -> str:
    return f"{row['dtype']} {row['shape']}"


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


@dataclass(frozen=True)
class _Setting:
    """What a diagnosis knows besides the counters: the spec's minimum bytes, the GPU's SMs."""

    min_bytes: float | None = None
    sm_count: int | None = None


def _diagnose(m: Mapping, ev: _Evidence, s: _Setting) -> _Diagnosis | None:
    has_memory = _num(m, "memory_throughput_pct") is not None
    mem_key = "memory_throughput_pct" if has_memory else "dram_throughput_pct"
    mem, sm = _num(m, mem_key), _num(m, "sm_throughput_pct")
    if mem is None or sm is None:
        return None
    kind = classify(mem, sm)
    mem_q, sm_q = ev.q(mem_key, mem), ev.q("sm_throughput_pct", sm)
    unit = "DRAM, the busiest memory unit," if _dram_busiest(m) else "the busiest memory unit"
    lead = {
        "memory": f"Memory-bound (ncu speed of light): {unit} runs at {mem_q} of peak against "
        f"{sm_q} for the SM.",
        "compute": f"Compute-bound (ncu speed of light): the SM runs at {sm_q} of peak against "
        f"{mem_q} for memory.",
        "latency": f"Latency-bound (ncu speed of light): SM {sm_q} and memory {mem_q} of peak "
        "are both low, so neither unit is kept busy.",
        "balanced": f"Balanced (ncu speed of light): SM {sm_q} and memory {mem_q} of peak are "
        "close and neither is saturated, so only cutting both the math and the traffic gains much.",
    }[kind]
    detail = _DETAILS[kind](m, ev, s)
    return _Diagnosis(kind, f"{lead} {detail.text}".strip(), detail.step)


def _dram_busiest(m: Mapping) -> bool:
    """DRAM is the busiest memory unit: its level is the memory level (to the 0.1 quoted)."""
    dram, mem = _num(m, "dram_throughput_pct"), _num(m, "memory_throughput_pct")
    return dram is not None and (mem is None or round(mem - dram, 1) == 0)


def _joined(*said: _Said | None, step_from: _Said | None = None) -> _Said:
    """Sentences in order; the next step is step_from's, else the first one given."""
    found = [x for x in said if x]
    step = step_from.step if step_from else next((x.step for x in found if x.step), None)
    return _Said(" ".join(x.text for x in found if x.text), step)


def _memory_detail(m: Mapping, ev: _Evidence, s: _Setting) -> _Said:
    excess = _excess_bytes(m, ev, s.min_bytes)
    # extra passes are the cheapest bytes to remove, whatever the DRAM level: their step comes
    # first, and how many bytes are in flight matters only once they are gone
    level = _dram_level(m, ev, s, in_flight=excess is None)
    return _joined(level, excess or _l2_resident(m, ev, s), step_from=excess)


def _dram_level(m: Mapping, ev: _Evidence, s: _Setting, in_flight: bool) -> _Said:
    dram, mem = _num(m, "dram_throughput_pct"), _num(m, "memory_throughput_pct")
    if dram is None:
        return _Said(
            "", "open MemoryWorkloadAnalysis in Nsight Compute to see the busy memory unit"
        )
    level = ev.q("dram_throughput_pct", dram)
    # the lead quoted DRAM's level when DRAM is the busiest unit: do not say it twice
    lead = "" if _dram_busiest(m) else f"DRAM runs at {level} of peak"
    copy_share = _num(m, "pct_peak_bw")
    at_copy = None
    if copy_share is not None:
        at_copy = f"at {ev.q('pct_peak_bw', copy_share)} of the measured copy bandwidth"
    if copy_share is not None and copy_share >= th.NEAR_COPY_CEILING_PCT:
        return _at_roof(_clause(lead, f"{at_copy} the case streams about as fast as a device copy"))
    if dram >= th.NEAR_PEAK_DRAM_PCT:
        reach = "about the rate a device copy reaches"
        return _at_roof(f"{lead}, {reach}" if lead else f"DRAM runs at {reach}")
    if mem is not None and mem - dram >= th.CACHE_BOUND_GAP_PCT:
        return _Said(
            f"DRAM runs at only {level} of peak, well under the busiest memory unit: the pressure "
            "is on L1, L2 or shared memory, not DRAM.",
            "open MemoryWorkloadAnalysis in Nsight Compute for the busy cache level: uncoalesced "
            "or strided access, shared-memory bank conflicts, or L2 misses",
        )
    rest = "that is short of the rate a device copy reaches"
    if at_copy:
        rest = f"{at_copy} the case is short of a device copy"
    short = _Said(_clause(lead, rest) + ".", None)
    return _joined(short, _in_flight(m, ev, s)) if in_flight else short


def _clause(lead: str, rest: str) -> str:
    """ "<lead>, and <rest>", or <rest> as a sentence of its own when there is no lead."""
    return f"{lead}, and {rest}" if lead else f"{rest[0].upper()}{rest[1:]}"


def _at_roof(text: str) -> _Said:
    return _Said(
        f"{text}: no launch-configuration change will help, only moving fewer bytes will.",
        "fuse it with the ops around it or reuse data on chip (fewer DRAM bytes); tuning the "
        "launch will not help",
    )


def _in_flight(m: Mapping, ev: _Evidence, s: _Setting) -> _Said:
    """A stream short of the copy roof needs more bytes in flight: blocks, warps, or loads per
    warp, whichever the counters show is short."""
    short_of_warps = _small_grid(m, ev, s) or _low_occupancy(m, ev, s)
    if short_of_warps:
        return short_of_warps
    occupancy = _nums(m, "theoretical_occupancy_pct", "achieved_occupancy_pct")
    if occupancy is None:
        return _Said(
            "",
            "get more bytes in flight: wider (128-bit) loads, more loads outstanding per thread, "
            "or more warps per SM",
        )
    theoretical, achieved = occupancy
    theo_q = ev.q("theoretical_occupancy_pct", theoretical)
    achieved_q = ev.q("achieved_occupancy_pct", achieved)
    if round(theoretical, 1) >= th.FULL_OCCUPANCY_PCT:
        return _Said(
            f"Occupancy is not what limits it: theoretical occupancy is already {theo_q} "
            f"({achieved_q} achieved), so more warps cannot add bytes in flight.",
            "keep more bytes in flight per thread: check the SASS for 128-bit loads (LDG.E.128) "
            "and unroll so each thread has several loads outstanding; more warps will not help",
        )
    return _Said(
        f"Theoretical occupancy is {theo_q}{_registers(m, ev)} ({achieved_q} achieved), so the "
        "SM holds fewer warps, and fewer loads in flight, than it could.",
        "get more bytes in flight: cut registers per thread (or shared memory per block) to raise "
        "occupancy, or issue wider (128-bit) loads so each thread keeps more outstanding",
    )


def _registers(m: Mapping, ev: _Evidence) -> str:
    regs = _num(m, "registers_per_thread")
    if regs is None:
        return ""
    return f" at {ev.q('registers_per_thread', int(regs))} registers per thread"


def _excess_bytes(m: Mapping, ev: _Evidence, min_bytes: float | None) -> _Said | None:
    dram_bytes = _num(m, "dram_bytes")
    if dram_bytes is None or not min_bytes or dram_bytes / min_bytes < th.EXCESS_DRAM_BYTES_RATIO:
        return None
    count = _num(m, "kernel_count") or 1
    ratio = ev.q("dram_over_min_bytes_x", dram_bytes / min_bytes)
    moved = f"{ev.q('dram_bytes', dram_bytes)} through DRAM, {ratio} the "
    moved += f"{ev.q('bytes', min_bytes)} minimum"
    if count > 1:
        return _Said(
            f"Its {ev.q('kernel_count', int(count))} kernels move {moved}: each pass over the "
            "data crosses DRAM again.",
            "fuse the kernels so the data crosses DRAM once: each extra pass costs a full read "
            "or write",
        )
    return _Said(
        f"It moves {moved}: it makes extra passes over its data.",
        "remove the extra passes over the data first: each one costs a full read from DRAM",
    )


def _l2_resident(m: Mapping, ev: _Evidence, s: _Setting) -> _Said | None:
    dram_bytes = _num(m, "dram_bytes")
    if dram_bytes is None or not s.min_bytes:
        return None
    if dram_bytes / s.min_bytes >= th.L2_RESIDENT_BYTES_RATIO:
        return None
    return _Said(
        f"ncu counted {ev.q('dram_bytes', dram_bytes)} through DRAM, "
        f"{ev.q('dram_over_min_bytes_x', dram_bytes / s.min_bytes)} the "
        f"{ev.q('bytes', s.min_bytes)} minimum: the rest stayed in L2 (written lines not yet "
        "flushed when the kernel ends), so DRAM throughput understates its memory traffic.",
        None,
    )


def _compute_detail(m: Mapping, ev: _Evidence, _s: _Setting) -> _Said:
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


def _balanced_detail(_m: Mapping, _ev: _Evidence, _s: _Setting) -> _Said:
    return _Said(
        "",
        "cut both the math and the traffic; Nsight Compute's ComputeWorkloadAnalysis and "
        "MemoryWorkloadAnalysis show where each goes",
    )


# --- latency-bound causes ------------------------------------------------------------------------


def _grid_too_small(m: Mapping, s: _Setting) -> bool:
    """Under one wave at a cost: SMs without a block, or a quarter of one wave's slots empty."""
    waves, grid = _num(m, "waves_per_sm"), _num(m, "grid_size")
    if waves is None or waves >= th.SMALL_GRID_WAVES:
        return False
    if grid is not None and s.sm_count and grid < s.sm_count:
        return True
    return 1 - waves >= th.TAIL_IDLE_SHARE


def _tail_idle(m: Mapping) -> float | None:
    """The share of block slots the partial last wave leaves idle, when that is a tail effect."""
    waves = _num(m, "waves_per_sm")
    if waves is None or waves < th.SMALL_GRID_WAVES:
        return None
    slots = math.ceil(round(waves, 6))  # 2.0000001 waves is two whole waves, not three
    idle = (slots - waves) / slots
    return idle if idle >= th.TAIL_IDLE_SHARE else None


def _launch_overhead(m: Mapping, ev: _Evidence, _s: _Setting) -> _Said | None:
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


def _small_grid(m: Mapping, ev: _Evidence, s: _Setting) -> _Said | None:
    if not _grid_too_small(m, s):
        return None
    text = f"Small grid: {_grid_phrase(m, ev, s)}."
    short = _short_duration(m, ev)
    if short:
        # so little work that splitting it over more SMs saves less than the launch costs
        return _Said(
            f"{text} {short}",
            "at this size the launch is the cost: fuse it with the ops around it or capture the "
            "sequence in a CUDA graph; spreading so little work over more SMs gains little",
        )
    return _Said(
        text,
        "launch more, smaller programs (split rows or the reduction across programs) so every SM "
        "gets work",
    )


def _grid_phrase(m: Mapping, ev: _Evidence, s: _Setting) -> str:
    grid, waves = _num(m, "grid_size"), _num(m, "waves_per_sm")
    fill = ev.q("wave_fill_pct", waves * 100)
    if grid is None:
        return f"it fills only {fill} of one wave's block slots"
    whose = "its largest launch has" if (_num(m, "kernel_count") or 1) > 1 else "it launches"
    blocks = f"{ev.q('grid_size', int(grid))} {_count(grid, 'block')}"
    if s.sm_count and grid < s.sm_count:
        idle = ev.q("idle_sms", s.sm_count - int(grid))
        return f"{whose} {blocks} for {ev.q('sm_count', s.sm_count)} SMs, so {idle} SMs get no work"
    return (
        f"{whose} {blocks}, {fill} of the block slots one wave holds, so the grid, not the "
        "kernel, caps occupancy"
    )


def _short_duration(m: Mapping, ev: _Evidence) -> str | None:
    count, duration = _num(m, "kernel_count"), _num(m, "ncu_duration_ms")
    if duration is None or (count is not None and count > 1) or duration >= th.SHORT_KERNEL_MS:
        return None
    return (
        f"At {ev.q('ncu_duration_ms', duration)} the kernel lasts about as long as a launch "
        "costs, so back to back with other kernels, launch overhead sets its pace."
    )


def _tail_effect(m: Mapping, ev: _Evidence, _s: _Setting) -> _Said | None:
    idle = _tail_idle(m)
    if idle is None:
        return None
    waves = _num(m, "waves_per_sm")
    fill = ev.q("last_wave_fill_pct", round((waves - math.ceil(round(waves, 6)) + 1) * 100, 2))
    return _Said(
        f"Tail effect: {ev.q('waves_per_sm', waves)} waves, so the last wave is only {fill} full "
        f"and {ev.q('tail_idle_pct', round(idle * 100, 2))} of the launch's block slots sit idle.",
        "size the grid (or the work per program) so the waves come out whole, or just under a "
        "whole number",
    )


def _low_occupancy(m: Mapping, ev: _Evidence, s: _Setting) -> _Said | None:
    occupancy = _nums(m, "achieved_occupancy_pct", "theoretical_occupancy_pct")
    # a grid under one wave caps achieved occupancy itself: the small-grid cause says so
    if occupancy is None or _grid_too_small(m, s):
        return None
    achieved, theoretical = occupancy
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
            f"{ev.q('theoretical_occupancy_pct', theoretical)} theoretical occupancy"
            f"{_registers(m, ev)}, capped by registers or shared memory per block.",
            "cut registers or shared memory per block (smaller tiles, fewer stages, other "
            "num_warps) to fit more warps per SM",
        )
    return None


def _short_kernel(m: Mapping, ev: _Evidence, s: _Setting) -> _Said | None:
    if _grid_too_small(m, s):  # the small-grid cause already weighs the duration
        return None
    short = _short_duration(m, ev)
    if short is None:
        return None
    return _Said(
        f"Short kernel: {short[0].lower()}{short[1:]}",
        "fuse it with the kernels around it or capture the sequence in a CUDA graph",
    )


# Most specific first: the first cause found gives the next step.
_CAUSES = (_launch_overhead, _small_grid, _tail_effect, _low_occupancy, _short_kernel)


def _latency_detail(m: Mapping, ev: _Evidence, s: _Setting) -> _Said:
    found = [said for said in (check(m, ev, s) for check in _CAUSES) if said]
    excess = _excess_bytes(m, ev, s.min_bytes)
    if found:
        return _joined(*found, excess)
    none_found = _Said(
        "No launch-shape or occupancy cause shows in these counters.",
        "profile with ncu --section WarpStateStats --section SchedulerStats to see what the "
        "warps wait on",
    )
    # extra DRAM passes outrank the generic advice; data left in L2 explains low DRAM figures
    return _joined(none_found, excess or _l2_resident(m, ev, s), step_from=excess)


_DETAILS: dict[str, Callable[[Mapping, _Evidence, _Setting], _Said]] = {
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
    side, roof = ("under", "the copy bandwidth") if ai < ridge else ("over", "the matmul rate")
    text = (
        f"Arithmetic intensity {ev.q('arithmetic_intensity_flop_per_byte', ai)} is {side} the "
        f"ridge point at {ev.q('ridge_flop_per_byte', ridge)} of the measured ceilings "
        f"({ev.q('copy_gbps', bw)}, {ev.q('matmul_tflops', peak)}), so its roof is {roof}"
    )
    if ai < ridge and "pct_peak_bw" in ev:
        return text + "."  # the timing sentence already gave its share of the copy bandwidth
    bound_s = max(flops / (peak * 1e12), min_bytes / (bw * 1e9))
    return text + f"; it reaches {ev.q('roofline_pct', bound_s / (ms * 1e-3) * 100)} of that roof."


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


class _Quote(NamedTuple):
    speedup: float
    text: str
    launches: int


def _quoted_rules(
    rules: pd.DataFrame | None, column: str, match: Callable[[pd.Series], pd.Series]
) -> list[str]:
    """NVIDIA's WARNING/OPTIMIZATION messages for the rows of `rules` where match(rules[column]):
    one per rule, from the launch with the largest estimated speedup (a case of several launches
    raises the same rule once per launch, with other numbers)."""
    if rules is None or rules.empty or column not in rules or "type" not in rules:
        return []
    wanted = rules["type"].astype(str).str.upper().isin(QUOTED_RULE_TYPES) & match(rules[column])
    picked: dict[str, _Quote] = {}
    for rule in rules[wanted].to_dict("records"):
        name = _text(rule, "rule") or "NVIDIA"
        speedup = _num(rule, "speedup_pct")
        text = f"{name}: {_clean_rule_message(_text(rule, 'message') or '')}"
        if speedup:
            text += f" (NVIDIA's estimated speedup: {_sig(speedup)}%)"
        best = picked.get(name)
        if best is None or (speedup or 0.0) > best.speedup:
            picked[name] = _Quote(speedup or 0.0, text, best.launches + 1 if best else 1)
        else:
            picked[name] = best._replace(launches=best.launches + 1)
    return [_with_launches(q) for q in picked.values()]


def _with_launches(quote: _Quote) -> str:
    if quote.launches == 1:
        return quote.text
    which = "the one with the largest estimated speedup" if quote.speedup else "the first"
    return f"{quote.text} (raised for {quote.launches} launches; {which} is quoted)"


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
    sm_count: int | None = None

    @classmethod
    def of(cls, run: Run) -> _RunContext:
        counters = run.manifest.get("counters") or {}
        reason = None
        if run.timing_only:
            reason = (
                counters.get("reason") or f"counters status: {counters.get('status', 'unknown')}"
            )
        sm_count = _num(run.manifest.get("fingerprint") or {}, "sm_count")
        return cls(
            run.manifest.get("ceilings") or {},
            reason,
            counters.get("fix") or None,
            run.rules,
            int(sm_count) if sm_count else None,
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
        subject=f"{kernel} {variant} {_where(row)}",
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
        timing = _timing_sentence(row, ev)  # first: later sentences refer to its copy share
        diagnosis = (
            _timing_only(row, ev, reason, ctx.fix)
            if reason
            else _diagnose(row, ev, _Setting(_num(row, "bytes"), ctx.sm_count))
        )
        sentences = [timing, diagnosis.text, _roofline(ev, row, ctx.ceilings)]
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


@dataclass
class _Sweep:
    """What one lab variant's verdict reads: its cases, the baselines', each case's next step."""

    kernel: str
    variant: str
    lab: list[dict]
    base: list[dict]
    steps: dict[tuple[str, str], str | None]
    ctx: _RunContext

    def row(self, variant: str, where: str) -> dict | None:
        rows = self.lab if variant == self.variant else self.base
        return next((r for r in rows if str(r["variant"]) == variant and _where(r) == where), None)


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
    """Each lab case against each baseline timed at the same dtype and shape; every figure of each
    comparison goes to the evidence, quoted in the text or not."""
    out = []
    for lab in lab_rows:
        for base in base_rows:
            if _where(base) == _where(lab) and _timed(base):
                c = _compare(lab, base)
                ev[f"{c.key}: delta_ms"], ev[f"{c.key}: delta_pct"] = c.delta_ms, c.delta_pct
                ev[f"{c.key}: spread_ms"], ev[f"{c.key}: outcome"] = c.spread_ms, c.outcome
                out.append(c)
    return out


def _margin(ev: _Evidence, c: _Comparison) -> str:
    """A margin quoted as a size; evidence keeps the signed values (lab - baseline)."""
    ms = ev.q_abs(f"{c.key}: delta_ms", c.delta_ms)
    return f"{ms} ({_margin_pct(ev, c)})"


def _margin_pct(ev: _Evidence, c: _Comparison) -> str:
    return ev.q_abs(f"{c.key}: delta_pct", c.delta_pct)


def _verdicts(
    kernel: str, rows: list[dict], case_findings: list[Finding], ctx: _RunContext
) -> list[Finding]:
    lab = [r for r in rows if not as_bool(r.get("baseline"))]
    base = [r for r in rows if as_bool(r.get("baseline"))]
    variants = list(dict.fromkeys(str(r["variant"]) for r in lab))
    # a verdict's next step may come from the counters of a case where it loses
    steps = {
        (str(r["variant"]), _where(r)): f.next_step
        for r, f in zip(rows, case_findings, strict=True)
    }
    sweeps = [
        _Sweep(kernel, v, [r for r in lab if str(r["variant"]) == v], base, steps, ctx)
        for v in variants
    ]
    return [_verdict(sweep, len(variants) > 1) for sweep in sweeps]


def _verdict(sweep: _Sweep, several: bool) -> Finding:
    ev = _Evidence()
    finding = Finding(
        subject=f"{sweep.kernel} {sweep.variant}" if several else sweep.kernel,
        kind="verdict",
        kernel=sweep.kernel,
        variant=sweep.variant,
    )
    failed = [r for r in sweep.lab if not _timed(r)]
    comparisons = [] if failed else _comparisons(sweep.lab, sweep.base, ev)
    if failed:
        finding.verdict, finding.text, finding.next_step = _incorrect_verdict(
            sweep.variant, failed, ev
        )
    elif not comparisons:
        finding.text = (
            f"{sweep.variant} has no baseline timed at the same dtype and shape, so there is no "
            "verdict."
        )
    else:
        finding.verdict, text, finding.next_step = _judge(sweep, comparisons, ev)
        sentences = [text, _uncompared(sweep.lab, comparisons, ev), _fusion_sentence(sweep, ev)]
        finding.text = " ".join(s for s in sentences if s)
    finding.evidence = dict(ev)
    return finding


def _uncompared(lab: list[dict], comparisons: list[_Comparison], ev: _Evidence) -> str:
    """Lab cases with no baseline timed beside them: the verdict says nothing about those."""
    compared = {c.where for c in comparisons}
    missing = [w for w in (_where(r) for r in lab) if w not in compared]
    if not missing:
        return ""
    places = ev.q("not_compared", ", ".join(missing))
    return f"No baseline was timed at {places}, so it is not judged there."


def _incorrect_verdict(variant: str, failed: list[dict], ev: _Evidence) -> tuple[str, str, str]:
    places = [f"at {_where(r)} it is {_failure(r, ev, f'{_where(r)}: ')}" for r in failed]
    text = (
        f"{variant} is not a win: an incorrect variant never counts as fast, and "
        + "; ".join(places)
        + "."
    )
    return "not a win", text, f"fix correctness at {_where(failed[0])} first"


def _judge(
    sweep: _Sweep, comparisons: list[_Comparison], ev: _Evidence
) -> tuple[str, str, str | None]:
    if all(c.outcome == "faster" for c in comparisons):
        return "win", _win_text(sweep, comparisons, ev), None
    places = list(dict.fromkeys(c.where for c in comparisons))
    beaten_everywhere = all(
        any(c.outcome == "slower" for c in comparisons if c.where == p) for p in places
    )
    verdict = "not a win" if beaten_everywhere else "active track"
    losses = [c for c in comparisons if c.outcome == "slower"]
    ties = [c for c in comparisons if c.outcome == "noise"]
    sentences = [
        _headline(sweep, verdict, comparisons, ev),
        _loss_list(losses, ev),
        _tie_sentence(ties, ev),
    ]
    step = _loss_step(sweep, losses, ev) if losses else _next_at(_worst(ties), sweep)
    return verdict, " ".join(s for s in sentences if s), step


def _win_text(sweep: _Sweep, comparisons: list[_Comparison], ev: _Evidence) -> str:
    baselines = _and(list(dict.fromkeys(c.baseline for c in comparisons)))
    n_lab, n_compared = len(sweep.lab), len({c.where for c in comparisons})
    if n_compared == n_lab:
        lead = (
            f"correct and faster than every baseline timed beside it ({baselines}) at "
            f"{_cases(ev, 'cases_compared', n_lab)}"
        )
    else:
        lead = (
            f"correct at {_cases(ev, 'lab_cases', n_lab)} and faster than every baseline timed "
            f"beside it ({baselines}) at {_cases(ev, 'cases_compared', n_compared)} compared"
        )
    ev["cases_compared"] = n_compared
    closest = min(comparisons, key=lambda c: abs(c.delta_pct))
    widest = max(comparisons, key=lambda c: abs(c.delta_pct))
    text = (
        f"{sweep.variant} is a win: {lead}, beyond the timing spread. The smallest margin is "
        f"{_margin(ev, closest)} against {closest.baseline} at {closest.where}"
    )
    if widest is not closest:
        text += f"; the largest {_margin(ev, widest)} against {widest.baseline} at {widest.where}"
    return text + "."


def _headline(sweep: _Sweep, verdict: str, comparisons: list[_Comparison], ev: _Evidence) -> str:
    """The verdict in one sentence: correctness, then each baseline's count of wins and losses,
    baselines it never loses to first."""
    lead = {"active track": "is an active track", "not a win": "is not a win"}[verdict]
    text = f"{sweep.variant} {lead}: correct at {_cases(ev, 'lab_cases', len(sweep.lab))}"
    if verdict == "not a win":
        where = "at every one" if len(sweep.lab) > 1 else "there"
        text += f", but {where} a baseline is faster beyond the timing spread"
    names = list(dict.fromkeys(c.baseline for c in comparisons))
    lost = {c.baseline for c in comparisons if c.outcome == "slower"}
    ordered = [b for b in names if b not in lost] + [b for b in names if b in lost]
    clauses = [
        _baseline_clause(b, [c for c in comparisons if c.baseline == b], ev) for b in ordered
    ]
    return f"{text}; " + "; ".join(clauses) + "."


def _baseline_clause(baseline: str, mine: list[_Comparison], ev: _Evidence) -> str:
    counts = {o: sum(c.outcome == o for c in mine) for o in ("faster", "noise", "slower")}
    for outcome, count in counts.items():  # every count, quoted or not
        ev[f"vs {baseline}: {outcome}"] = count

    def n(outcome: str) -> str:
        return ev.q(f"vs {baseline}: {outcome}", counts[outcome])

    total = ev.q(f"vs {baseline}: compared", len(mine))
    if len(mine) == 1:
        return _single_clause(baseline, mine[0], ev)
    if counts["slower"]:
        worst = _worst([c for c in mine if c.outcome == "slower"])
        text = (
            f"loses to {baseline} at {n('slower')} of {total}, by up to {_margin_pct(ev, worst)} "
            f"(worst: {worst.where})"
        )
        rest = [f"beats it at {n('faster')}"] if counts["faster"] else []
        rest += [f"ties at {n('noise')}"] if counts["noise"] else []
        return ", ".join([text, _and(rest)]) if rest else text
    if counts["faster"] == len(mine):
        return f"beats {baseline} at all {total}"
    if not counts["faster"]:
        return f"ties with {baseline} at all {total}"
    return f"beats {baseline} at {n('faster')} of {total} and ties at {n('noise')}"


def _single_clause(baseline: str, c: _Comparison, ev: _Evidence) -> str:
    if c.outcome == "slower":
        return f"loses to {baseline} by {_margin_pct(ev, c)} (at {c.where})"
    return f"beats {baseline}" if c.outcome == "faster" else f"ties with {baseline}"


def _loss_list(losses: list[_Comparison], ev: _Evidence) -> str:
    """Per baseline, the dtypes and shapes it wins at, each with its margin: one sentence each."""
    sentences = []
    for baseline in dict.fromkeys(c.baseline for c in losses):
        by_dtype: dict[str, list[str]] = {}
        for c in (c for c in losses if c.baseline == baseline):
            by_dtype.setdefault(c.dtype, []).append(f"{c.shape} by {_margin_pct(ev, c)}")
        places = "; ".join(f"{dtype} {', '.join(items)}" for dtype, items in by_dtype.items())
        sentences.append(f"Losses to {baseline}: {places}.")
    return " ".join(sentences)


def _tie_sentence(ties: list[_Comparison], ev: _Evidence) -> str:
    """Ties as a count and the widest one: a gap inside the spread is not shown to be real."""
    if not ties:
        return ""
    widest = max(ties, key=lambda c: abs(c.delta_pct))
    gap = (
        f"{_margin(ev, widest)} {'slower' if widest.delta_ms > 0 else 'faster'} than "
        f"{widest.baseline} at {widest.where}, inside its "
        f"{ev.q(f'{widest.key}: spread_ms', widest.spread_ms)} spread"
    )
    n = ev.q("ties", len(ties))
    if len(ties) == 1:
        return f"1 comparison ties within the timing spread: {gap}."
    return f"{n} comparisons tie within the timing spread; the widest gap among them is {gap}."


def _worst(comparisons: list[_Comparison]) -> _Comparison:
    return max(comparisons, key=lambda c: c.delta_pct)


def _next_at(c: _Comparison, sweep: _Sweep) -> str | None:
    step = sweep.steps.get((sweep.variant, c.where))
    return f"At {c.where}: {step}." if step else None


def _cases(ev: _Evidence, key: str, n: int) -> str:
    """ "all 24 dtype/shapes", or "its only dtype/shape"."""
    return f"all {ev.q(key, n)} dtype/shapes" if n > 1 else "its only dtype/shape"


# --- the verdict's evidence on fusion ---------------------------------------------------------


def _representative(rows: list[dict]) -> dict:
    """The lab case whose counters explain the verdict: the largest (most bytes, then slowest)."""
    return max(rows, key=lambda r: (_num(r, "bytes") or 0.0, _num(r, "p50_ms") or 0.0))


def _fusion_sentence(sweep: _Sweep, ev: _Evidence) -> str:
    """At the largest case, the lab kernel's DRAM level beside each unfused baseline's kernel
    count and DRAM bytes: what fusing buys."""
    rep = _representative(sweep.lab)
    if sweep.ctx.no_counters or not _has_counters(rep):
        reason = sweep.ctx.no_counters or "no counters were captured for this case"
        return f"Timing only ({ev.q('counters_reason', reason)}): no counters show why."
    where = _where(rep)
    unfused = [b for b in sweep.base if _where(b) == where and (_num(b, "kernel_count") or 0) > 1]
    title = "Fusion" if unfused else "Counters"
    text = f"{title} at {where}, the largest case: {_lab_traffic(rep, ev)}"
    for b in unfused:
        text += f"; unfused {b['variant']} {_unfused_traffic(b, rep, ev)}"
    return text + "."


def _lab_traffic(rep: Mapping, ev: _Evidence) -> str:
    count = _num(rep, "kernel_count")
    if count is None:
        who, verb = str(rep["variant"]), "runs"
    else:
        kernels = f"{ev.q_case(rep, 'kernel_count')} {_count(count, 'kernel')}"
        who, verb = f"{rep['variant']}'s {kernels}", "runs" if count == 1 else "run"
    levels = [
        f"{ev.q_case(rep, col)} of {what}"
        for col, what in (
            ("dram_throughput_pct", "DRAM peak"),
            ("pct_peak_bw", "the measured copy bandwidth"),
        )
        if _num(rep, col) is not None
    ]
    text = f"{who} {verb}"
    if levels:
        text += f" at {levels[0]}" + (f" ({levels[1]})" if len(levels) > 1 else "")
    if _num(rep, "dram_bytes") is not None:
        text += f" and move{'s' if verb == 'runs' else ''} {ev.q_case(rep, 'dram_bytes')} "
        text += "through DRAM"
    return text


def _unfused_traffic(base: Mapping, rep: Mapping, ev: _Evidence) -> str:
    text = f"launches {ev.q_case(base, 'kernel_count')} kernels"
    base_bytes, lab_bytes = _num(base, "dram_bytes"), _num(rep, "dram_bytes")
    if base_bytes is None:
        return text
    if not lab_bytes:
        return f"{text} and moves {ev.q_case(base, 'dram_bytes')} through DRAM"
    key = f"{_where(base)} {base['variant']}: dram_over_{rep['variant']}_x"
    ratio = ev.q(key, base_bytes / lab_bytes)
    return f"{text} and moves {ratio} those bytes ({ev.q_case(base, 'dram_bytes')})"


# --- the verdict's next step: what the counters say where it loses --------------------------------


def _loss_step(sweep: _Sweep, losses: list[_Comparison], ev: _Evidence) -> str | None:
    """Losses grouped by the cause their counters show, worst loss first; one sentence per cause,
    setting the lab case's counters beside the winning baseline's."""
    groups: dict[tuple[str, str | None], list[_Comparison]] = {}
    for c in sorted(losses, key=lambda c: -c.delta_pct):
        cause = _loss_cause(sweep, c)
        own = sweep.steps.get((sweep.variant, c.where)) if cause == "own" else None
        groups.setdefault((cause, own), []).append(c)
    sentences = [
        _cause_sentence(sweep, cause, own, group, ev) for (cause, own), group in groups.items()
    ]
    return " ".join(s for s in sentences if s) or None


def _loss_cause(sweep: _Sweep, c: _Comparison) -> str:
    """traffic | occupancy | small grid | tail | in flight | own (the lab case's own step)."""
    lab, base = sweep.row(sweep.variant, c.where), sweep.row(c.baseline, c.where)
    if base is None or not (_has_counters(lab) and _has_counters(base)):
        return "own"
    lab_bytes, base_bytes = _num(lab, "dram_bytes"), _num(base, "dram_bytes")
    if lab_bytes and base_bytes and lab_bytes / base_bytes >= th.EXCESS_DRAM_BYTES_RATIO:
        return "traffic"
    cols = ("theoretical_occupancy_pct", "achieved_occupancy_pct", "dram_throughput_pct")
    mine, theirs = _nums(lab, *cols), _nums(base, *cols)
    if mine is not None and theirs is not None:
        if mine[0] < theirs[0] and mine[1] < theirs[1] - th.OCCUPANCY_GAP_PCT:
            return "occupancy"
    setting = _Setting(sm_count=sweep.ctx.sm_count)
    for name, costly in (("small grid", _grid_too_small), ("tail", _tail_cost)):
        if costly(lab, setting) and not costly(base, setting):
            return name
    if mine is not None and theirs is not None:
        if mine[1] >= theirs[1] - th.OCCUPANCY_GAP_PCT and mine[2] < theirs[2]:
            return "in flight"
    return "own"


def _tail_cost(row: Mapping, _s: _Setting) -> bool:
    return _tail_idle(row) is not None


def _cause_sentence(
    sweep: _Sweep, cause: str, own: str | None, group: list[_Comparison], ev: _Evidence
) -> str:
    worst = group[0]
    lab, base = sweep.row(sweep.variant, worst.where), sweep.row(worst.baseline, worst.where)
    also = [
        c.where + ("" if c.baseline == worst.baseline else f" against {c.baseline}")
        for c in group[1:]
    ]
    lead = f"At {worst.where} against {worst.baseline}"
    lead += f" (also {', '.join(also)})" if also else ""
    if cause == "own":
        return f"{lead}: {own}." if own else ""
    if cause in _LAUNCH_CAUSES:
        local = _Evidence()  # the case's figures, filed under its name as the verdict's others
        said = _LAUNCH_CAUSES[cause](lab, local, _Setting(sm_count=sweep.ctx.sm_count))
        ev.update({f"{worst.where} {sweep.variant}: {k}": v for k, v in local.items()})
        lower = said.text[0].lower() + said.text[1:].rstrip(".")
        return f"{lead}: {lower}, a cost {worst.baseline}'s launch does not have: {said.step}."
    return f"{lead}: {_CAUSE_TEXT[cause](sweep.variant, lab, base, ev)}."


def _traffic_text(variant: str, lab: Mapping, base: Mapping, ev: _Evidence) -> str:
    ratio = _num(lab, "dram_bytes") / _num(base, "dram_bytes")
    key = f"{_where(lab)} {variant}: dram_over_{base['variant']}_x"
    return (
        f"it moves {ev.q(key, ratio)} the DRAM bytes of {base['variant']} "
        f"({ev.q_case(lab, 'dram_bytes')} against {ev.q_case(base, 'dram_bytes')}): remove the "
        "extra passes over the data"
    )


def _occupancy_text(variant: str, lab: Mapping, base: Mapping, ev: _Evidence) -> str:
    b = base["variant"]
    text = (
        f"{_launches(lab, base, ev)}{variant}'s theoretical occupancy is "
        f"{ev.q_case(lab, 'theoretical_occupancy_pct')}"
        f"{_case_registers(lab, ev)} ({ev.q_case(lab, 'achieved_occupancy_pct')} achieved) "
        f"against {b}'s {ev.q_case(base, 'theoretical_occupancy_pct')}{_case_registers(base, ev)} "
        f"({ev.q_case(base, 'achieved_occupancy_pct')} achieved), so it keeps fewer warps, and "
        "fewer loads, in flight"
    )
    regs = _num(lab, "registers_per_thread"), _num(base, "registers_per_thread")
    if None not in regs and regs[0] > regs[1]:
        return text + (
            ": cut registers per thread (fewer values live per thread: more threads per block, "
            "or a loop over the data in chunks)"
        )
    return text + ": ncu's Occupancy section names what caps it (shared memory, block size)"


def _case_registers(row: Mapping, ev: _Evidence) -> str:
    if _num(row, "registers_per_thread") is None:
        return ""
    return f" at {ev.q_case(row, 'registers_per_thread')} registers per thread"


def _in_flight_text(variant: str, lab: Mapping, base: Mapping, ev: _Evidence) -> str:
    b = base["variant"]
    base_regs = ""
    if _num(base, "registers_per_thread") is not None:
        base_regs = f" at {ev.q_case(base, 'registers_per_thread')}"
    return (
        f"occupancy is not the limiter: {_launches(lab, base, ev)}{variant} holds "
        f"{ev.q_case(lab, 'achieved_occupancy_pct')} achieved occupancy "
        f"({ev.q_case(lab, 'theoretical_occupancy_pct')} theoretical{_case_registers(lab, ev)}) "
        f"against {b}'s {ev.q_case(base, 'achieved_occupancy_pct')} "
        f"({ev.q_case(base, 'theoretical_occupancy_pct')}{base_regs}), yet its DRAM runs at "
        f"{ev.q_case(lab, 'dram_throughput_pct')} of peak against "
        f"{ev.q_case(base, 'dram_throughput_pct')}; inspect the SASS for load width (128-bit "
        "LDG.E.128 or narrower) and for how many loads each thread keeps in flight "
        "(memory-level parallelism); more warps will not help"
    )


def _launches(lab: Mapping, base: Mapping, ev: _Evidence) -> str:
    """The two launch shapes side by side, or that they are the same."""
    cols = ("grid_size", "block_size")
    if _nums(lab, *cols) is None or _nums(base, *cols) is None:
        return ""
    grid, block = ev.q_case(lab, "grid_size"), ev.q_case(lab, "block_size")
    if _nums(lab, *cols) == _nums(base, *cols):
        return f"with the same launch as {base['variant']} ({grid} blocks of {block} threads), "
    return (
        f"with {grid} blocks of {block} threads against {base['variant']}'s "
        f"{ev.q_case(base, 'grid_size')} of {ev.q_case(base, 'block_size')}, "
    )


_LAUNCH_CAUSES = {"small grid": _small_grid, "tail": _tail_effect}
_CAUSE_TEXT: dict[str, Callable[[str, Mapping, Mapping, _Evidence], str]] = {
    "traffic": _traffic_text,
    "occupancy": _occupancy_text,
    "in flight": _in_flight_text,
}


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
    diagnosis = _diagnose(row, ev, _Setting()) or _Diagnosis(
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
