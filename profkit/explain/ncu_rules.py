"""Nsight Compute's guided-analysis results for a launch, kept, and judged in context.

Occupancy and launch-shape rules are set aside where the kernel already saturates the Tensor pipe
or DRAM (more warps cannot speed up a saturated unit); a tail-effect message is checked against
the actual waves; "at least two blocks per SM" is set aside for a persistent kernel; and a library
kernel's launch shape is not the user's to change. Each set-aside result keeps NVIDIA's text and
says why.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from profkit import thresholds as th
from profkit.explain.evidence import num, text
from profkit.explain.kernel_family import LIBRARY, family, is_persistent, launch_family
from profkit.explain.model import RuleResult
from profkit.explain.record import LaunchRecord, tail_idle

QUOTED_TYPES = ("WARNING", "OPTIMIZATION")
# rules about occupancy or the launch's shape, which a saturated unit makes moot
SHAPE_RULES = frozenset({"AchievedOccupancy", "TheoreticalOccupancy", "LaunchConfiguration"})


def by_launch(rules: pd.DataFrame | None) -> dict[int, list[dict]]:
    """The quoted rule results of a report, grouped by launch (read once per run)."""
    if rules is None or rules.empty:
        return {}
    out: dict[int, list[dict]] = {}
    for r in rules[rules["type"].isin(QUOTED_TYPES)].to_dict("records"):
        out.setdefault(int(r["launch"]), []).append(r)
    return out


def launch_rules(
    rules: Mapping[int, list[dict]], launch: Mapping, lab: bool | None = None
) -> list[RuleResult]:
    """NVIDIA's results for one launch (a kernels.csv row), each judged. lab: whether the launch
    belongs to a lab variant (its own kernels are the user's code, whatever their names
    resemble) or a baseline; None (a bare report) judges by the kernel's name alone."""
    index = num(launch, "launch")
    if index is None:
        return []
    return [judge(r, launch, lab) for r in rules.get(int(index), [])]


def judge(rule: Mapping, launch: Mapping, lab: bool | None = None) -> RuleResult:
    speedup = num(rule, "speedup_pct")
    result = RuleResult(
        rule=str(rule.get("rule", "")),
        section=str(rule.get("section", "")),
        type=str(rule.get("type", "")),
        message=text(rule, "message") or "",
        speedup_pct=speedup,
        launch=int(num(rule, "launch")) if num(rule, "launch") is not None else None,
        title=text(rule, "title") or "",
    )
    title = result.title
    name = text(launch, "kernel_name") or ""
    rec = LaunchRecord.of(launch)
    tensor, dram = rec.tensor_pct, rec.dram_pct
    if result.rule in SHAPE_RULES or title == "Small Grid":
        if tensor is not None and tensor >= th.RULES_TENSOR_SATURATED_PCT:
            return _aside(result, "tensor_saturated", tensor_pct=tensor)
        if dram is not None and dram >= th.RULES_DRAM_SATURATED_PCT:
            return _aside(result, "dram_saturated", dram_throughput_pct=dram)
    if title == "Tail Effect" or "partial wave" in result.message.lower():
        waves = rec.waves_per_sm
        idle = tail_idle(waves)
        if idle is not None and idle < th.TAIL_IDLE_SHARE:
            return _aside(
                result, "tail_small", waves_per_sm=waves, tail_idle_pct=round(idle * 100, 2)
            )
    if "two blocks per multiprocessor" in result.message and is_persistent(name):
        return _aside(result, "persistent_kernel")
    fam = family(name) if lab is None else launch_family(launch, lab)
    if result.rule in SHAPE_RULES and fam in LIBRARY:
        return _aside(result, "library_kernel", family=str(fam))
    return result


def _aside(result: RuleResult, why: str, **note: object) -> RuleResult:
    result.suppressed = why
    result.note = {k: v for k, v in note.items() if not (isinstance(v, float) and math.isnan(v))}
    return result


def case_rules(
    rules: Mapping[int, list[dict]], launches: list[Mapping], lab: bool | None = None
) -> list[RuleResult]:
    """A case's results: each rule once, from the launch NVIDIA expects most of (its estimated
    speedup, else the longest launch). lab as launch_rules."""
    best: dict[tuple[str, str], tuple[tuple[float, float], RuleResult]] = {}
    for launch in launches:
        weight = LaunchRecord.of(launch).duration_ms or 0.0
        for result in launch_rules(rules, launch, lab):
            key = (result.rule, result.title)
            score = result.speedup_pct if result.speedup_pct is not None else -1.0
            rank = (score, weight)
            if key not in best or rank > best[key][0]:
                best[key] = (rank, result)
    return [r for _, r in best.values()]
