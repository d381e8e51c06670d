"""The pace pass: the program run once more without the profiler, the host clock read where each
step range opens. torch.profiler adds host cost to every op it records, so the gaps the timing
pass sees between a step's kernels include the profiler's own. A step's period without it, against
the GPU's busy time per step under it (the same kernels: their durations do not depend on the
host), gives the GPU's idle share as the program runs alone.

The period is the mean interval between the opens of consecutive measured steps (the interval
after the last one is not seen; with one step measured, the interval into it). In steady state
that is the step's real cost, host-bound or GPU-bound: the host cannot run ahead of the GPU by
more than the launch queue holds.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from profkit.workload.timing_pass import Region

FILE = "pace.json"  # kept in the run, beside the timing export
FORMAT = "profkit-pace"
METHOD = "host clock between the opens of consecutive measured steps, without the profiler"


def period_ms(opens_ms: Sequence[float], measured: int) -> tuple[float, int] | None:
    """(mean interval between the last `measured` step opens, intervals), or None under 2."""
    first = max(len(opens_ms) - max(measured, 2), 0)
    intervals = len(opens_ms) - 1 - first
    if intervals < 1:
        return None
    return (opens_ms[-1] - opens_ms[first]) / intervals, intervals


def measure(path: Path, region: Region) -> dict:
    """The manifest's "pace" block from the pace child's file and the timing pass's region."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        return failed(f"the pace pass left no readable {FILE} ({exc.__class__.__name__})")
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return failed(f"{FILE} is not a profkit pace file")
    if data.get("exit_status") != 0:
        return failed(
            f"the program exited with status {data.get('exit_status')} without the profiler"
        )
    opens = [t / 1e6 for t in data.get("opens_ns", [])]
    if len(opens) != region.steps_seen:
        return failed(
            f"the program ran {len(opens)} step(s) without the profiler and {region.steps_seen} "
            "under it: the runs are not the same"
        )
    plain = period_ms(opens, region.steps_measured)
    profiled = period_ms(region.step_opens_ms, region.steps_measured)
    if plain is None or profiled is None or region.steps_measured < 1:
        return failed("fewer than 2 steps: no interval between steps to time")
    busy = region.busy_ms / region.steps_measured
    return {
        "status": "ok",
        "method": METHOD,
        "intervals": plain[1],
        "period_ms": round(plain[0], 6),
        "profiled_period_ms": round(profiled[0], 6),
        "busy_ms_per_step": round(busy, 6),
        "gpu_idle_pct": round(idle_pct(busy, plain[0]), 3),
        "profiled_gpu_idle_pct": round(idle_pct(busy, profiled[0]), 3),
        "wall_s": data.get("wall_s"),
    }


def idle_pct(busy_ms: float, period_ms: float) -> float:
    """The GPU's idle share of a step; a period under the GPU's own busy time (the host clock's
    noise) counts as the busy time: a step is never shorter than its kernels."""
    return 100.0 * (1.0 - busy_ms / max(period_ms, busy_ms)) if busy_ms > 0 else float("nan")


def against_plain(wall_s: float, plain_s: float | None) -> str:
    """A pass's wall time against the program's own run time (the pace pass runs it plainly), the
    ratio issue 33's goal bounds; empty where no plain run was timed."""
    return f", {wall_s / plain_s:.2f}x the program run plainly" if plain_s else ""


def failed(reason: str) -> dict:
    return {"status": "failed", "reason": reason}


def step_ms(manifest: Mapping) -> float | None:
    """A measured step's length without the profiler, where the pace pass timed it."""
    block = manifest.get("pace") or {}
    if block.get("status") != "ok":
        return None
    return max(float(block["period_ms"]), float(block["busy_ms_per_step"]))
