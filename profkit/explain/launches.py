"""Per-launch drill-down: a case of several kernels is judged by where its time goes.

Each launch gets its share of the case's time (ncu durations) and its own bottleneck; launches are
grouped by bottleneck, and the case's conclusion is the group holding most of the time, never a
duration-weighted mean of counters (which put an eager chain of launches at 87-90% DRAM under the
memory line).
"""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

from profkit import thresholds as th
from profkit.explain.context import Context
from profkit.explain.diagnose import diagnose
from profkit.explain.evidence import Evidence, num, text
from profkit.explain.kernel_family import GEMM, Family, launch_family, short_name
from profkit.explain.kinds import operand_dtype
from profkit.explain.model import Bottleneck, Cause, Launch, Reason
from profkit.explain.record import LaunchRecord

# counters quoted per launch (record fields; each quoted under its column's name)
_LAUNCH_FACTS = (
    "duration_ms",
    "dram_pct",
    "memory_pct",
    "sm_pct",
    "achieved_occupancy_pct",
    "grid_size",
    "block_size",
    "registers_per_thread",
    "waves_per_sm",
    "dram_bytes_read",
    "dram_bytes_write",
)


def by_case(kernels: pd.DataFrame | None) -> dict[str, list[dict]]:
    """A run's launches grouped by case, in launch order (read once per run)."""
    if kernels is None or kernels.empty or "case" not in kernels.columns:
        return {}
    out: dict[str, list[dict]] = {}
    ordered = kernels.sort_values("launch") if "launch" in kernels.columns else kernels
    for r in ordered.to_dict("records"):
        out.setdefault(str(r["case"]), []).append(r)
    return out


def weight_casts(rows: list[dict], found: list[Launch]) -> tuple[int, float] | None:
    """The weight casts of a float32 case under autocast, and their share of its time: ATen
    elementwise launches reading WEIGHT_CAST_READ_X or more the DRAM bytes of a GEMM whose
    operands are 16-bit by its name (the fp32 weight read and cast again on every call). None
    where the case has no such GEMM or no such launch."""
    records = [LaunchRecord.of(r, Family(x.family)) for r, x in zip(rows, found, strict=True)]
    low = [r.dram_bytes_read for r in records
           if r.family in GEMM and operand_dtype(r)[0] in ("bfloat16", "float16")
           and r.dram_bytes_read]  # fmt: skip
    if not low:
        return None
    casts = [x for r, x in zip(records, found, strict=True)
             if r.family == Family.ATEN_ELEMENTWISE and r.dram_bytes_read
             and r.dram_bytes_read >= th.WEIGHT_CAST_READ_X * min(low)]  # fmt: skip
    if not casts:
        return None
    return len(casts), sum(x.share_pct or 0.0 for x in casts)


def drill_down(rows: list[dict], ctx: Context, lab: bool = False) -> list[Launch]:
    records = [LaunchRecord.of(r) for r in rows]
    total = sum(rec.duration_ms or 0.0 for rec in records)
    out = []
    for row, rec in zip(rows, records, strict=True):
        fam = launch_family(row, lab)
        lctx = replace(ctx, read_floor=None, siblings=None)
        # a launch has no model of its own: judge its counters alone
        bare = replace(rec, family=fam, model_bytes=None, model_flops=None, device_p50_ms=None)
        diagnosis = diagnose(bare, lctx)
        ev = Evidence(diagnosis.evidence if diagnosis else {})
        for name in _LAUNCH_FACTS:
            ev.put(LaunchRecord.column(name), getattr(rec, name))
        duration = rec.duration_ms
        share = duration / total * 100 if duration is not None and total > 0 else None
        if share is not None:
            ev.put("share_pct", share)
        out.append(
            Launch(
                launch=int(num(row, "launch")) if num(row, "launch") is not None else None,
                name=short_name(text(row, "kernel_name") or "kernel"),
                family=str(fam),
                case=text(row, "case"),
                share_pct=share,
                bottleneck=diagnosis.bottleneck if diagnosis else None,
                unit=diagnosis.unit if diagnosis else None,
                evidence=dict(ev),
                reasons=diagnosis.reasons if diagnosis else [],
            )
        )
    return out


def where_time_goes(launches: list[Launch], ev: Evidence) -> tuple[Bottleneck | None, Reason]:
    """Group launches by bottleneck: the case's bottleneck is the group with most of the time."""
    groups: dict[str, dict] = {}
    for launch in launches:
        key = str(launch.bottleneck) if launch.bottleneck else "unknown"
        group = groups.setdefault(
            key, {"bottleneck": key, "launches": 0, "share_pct": 0.0, "dram_pcts": []}
        )
        group["launches"] += 1
        group["share_pct"] += launch.share_pct or 0.0
        dram = launch.evidence.get("dram_throughput_pct")
        if dram is not None:
            group["dram_pcts"].append(dram)
    ordered = sorted(groups.values(), key=lambda g: -g["share_pct"])
    for g in ordered:
        pcts = g.pop("dram_pcts")
        g["dram_min_pct"] = min(pcts) if pcts else None
        g["dram_max_pct"] = max(pcts) if pcts else None
    ev.put("launches", len(launches))
    top = ordered[0] if ordered else None
    if top is not None:
        ev.put("top_share_pct", top["share_pct"])
    bottleneck = None
    if top is not None and top["bottleneck"] != "unknown":
        bottleneck = Bottleneck(top["bottleneck"])
    detail = {
        "groups": ordered,
        "dominant": bool(top and top["share_pct"] >= th.DOMINANT_TIME_SHARE_PCT),
    }
    return bottleneck, Reason(Cause.TIME_IN_LAUNCHES, ["launches", "top_share_pct"], detail)
