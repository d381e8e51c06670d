"""Latency-bound causes: what a launch's shape and occupancy counters show keeps the GPU under-used.

Launch overhead, a grid under one wave, a tail wave, low occupancy and a short kernel, each with its
next step. `profkit.explain` quotes them for latency-bound cases (and for streams short of the copy
roof); `profkit.verdict` sets them beside a baseline's to say why a lab case loses.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from profkit import thresholds as th
from profkit.findings import _count, _Evidence, _num, _nums, _Said, _Setting


def _registers(m: Mapping, ev: _Evidence) -> str:
    regs = _num(m, "registers_per_thread")
    if regs is None:
        return ""
    return f" at {ev.q('registers_per_thread', int(regs))} registers per thread"


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
