"""Findings per case and per launch from a stored run's latencies and counters.

Pure pandas and Python (no torch, no GPU), so `profkit explain` runs anywhere on stored runs. Each
case gets its timing, the bottleneck (Nsight Compute's SpeedOfLight rule, and further where counters
allow), its position against the measured ceilings and NVIDIA's own rule messages; `explain_run`
puts each kernel's verdicts across the sweep (`profkit.verdict`) before its cases. Every threshold
lives in `profkit.thresholds`; `profkit.findings` holds the Finding record and how evidence is
quoted.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

import pandas as pd

from profkit import thresholds as th
from profkit.findings import (
    Finding,
    _Evidence,
    _failure,
    _has_counters,
    _num,
    _nums,
    _RunContext,
    _Said,
    _Setting,
    _sig,
    _text,
    _timed,
    _where,
    as_bool,
    format_value,
)
from profkit.latency_causes import _CAUSES, _low_occupancy, _registers, _small_grid
from profkit.store import Run
from profkit.verdict import timing_outcome, verdicts

__all__ = [
    "Finding",
    "as_bool",
    "classify",
    "explain_launches",
    "explain_run",
    "format_value",
    "timing_outcome",
]


# NVIDIA rule results worth quoting: OK results say nothing is wrong; ERROR ones are rule failures.
QUOTED_RULE_TYPES = ("WARNING", "OPTIMIZATION")


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


@dataclass
class _Diagnosis:
    bottleneck: str | None
    text: str
    next_step: str | None


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


# --- position against the measured ceilings -------------------------------------------------------


def _ceiling_values(ceilings: Mapping) -> tuple[float, float] | None:
    bw, peak = _num(ceilings, "copy_gbps"), _num(ceilings, "matmul_tflops")
    return (bw, peak) if bw and peak and bw > 0 and peak > 0 else None


def _roofline(ev: _Evidence, row: Mapping, ceilings: Mapping) -> str | None:
    """Arithmetic intensity against the ridge point, and the share of the roofline reached.

    achieved / min(peak, AI * bandwidth) equals max(flops / peak, bytes / bandwidth) / time: the
    second form also holds for kernels with no FLOPs (a copy)."""
    limits = _ceiling_values(ceilings)
    flops, min_bytes, ms = _num(row, "flops"), _num(row, "bytes"), _num(row, "device_p50_ms")
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


# --- NVIDIA's own rule messages -------------------------------------------------------------------


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


def _timing_sentence(row: Mapping, ev: _Evidence) -> str:
    text = f"p50 {ev.q('device_p50_ms', _num(row, 'device_p50_ms'))}"
    spread = _num(row, "device_iqr_ms")
    if spread is not None:
        text += f" (spread {ev.q('device_iqr_ms', spread)})"
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


# --- public entry points --------------------------------------------------------------------------


def explain_run(run: Run) -> list[Finding]:
    """Per kernel: one verdict per lab variant first, then one finding per case."""
    ctx = _RunContext.of(run)
    cases = run.cases.astype({"dtype": str, "shape": str, "variant": str, "kernel": str})
    findings: list[Finding] = []
    for kernel, group in cases.groupby("kernel", sort=False):
        rows = group.to_dict("records")
        case_findings = [_case_finding(r, ctx) for r in rows]
        findings += verdicts(str(kernel), rows, case_findings, ctx) + case_findings
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
