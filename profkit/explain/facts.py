"""The figures a diagnosis records beside its causes, for the detail view: the roofs the launch
is measured against, each memory level's hit rate and throughput, the instruction mix, every
pipe's utilization and every stall reason captured. No decision is made here."""

from __future__ import annotations

from profkit.explain.context import Context
from profkit.explain.evidence import Evidence
from profkit.explain.record import LaunchRecord
from profkit.explain.roofs import PIPES, compute_roof, memory_roof
from profkit.explain.stalls import ADVICE_TEXT

_LEVELS = ("l1_hit_pct", "l2_hit_pct", "l1_pct", "l2_pct", "dram_pct", "dram_bytes_read",
           "dram_bytes_write")  # fmt: skip
_MIX = ("inst_executed", "global_ld_inst", "global_st_inst")
_STALLS = (*ADVICE_TEXT, "not_selected")


def put_facts(rec: LaunchRecord, ctx: Context, ev: Evidence) -> float | None:
    """The figures, in `ev`; returns the share of the pipe's roof (roofs.compute_roof)."""
    share = compute_roof(rec, ctx.dtype, ctx.device, ev)
    memory_roof(rec, ev)
    for name in _LEVELS:
        ev.put(LaunchRecord.column(name), getattr(rec, name))
    ld, req = rec.global_ld_sectors, rec.global_ld_requests
    if ld is not None and req:
        ev.put("sectors_per_request_ratio", ld / req)
    for name in _MIX:
        ev.put(name, getattr(rec, name))
    for name, _ in PIPES:
        ev.put(LaunchRecord.column(name), getattr(rec, name))
    for reason in _STALLS:
        if reason in rec.stalls:
            ev.put(f"stall_{reason}_pct", rec.stalls[reason])
    return share
