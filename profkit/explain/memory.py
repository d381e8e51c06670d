"""The memory hierarchy: which level a memory-bound launch is bound on (where the stream stands
to the copy roof, coalescing, extra reads, a chain's extra passes, cache-bound, bank conflicts and
data left in L2 are catalogue entries).

Reads and writes are judged apart: writes still in the 60 MB L2 when a kernel ends are never
counted by DRAM, so summing them dilutes a re-read (F.rms_norm reads its input twice).
"""

from __future__ import annotations

from operator import itemgetter

from profkit import thresholds as th
from profkit.explain.evidence import Evidence
from profkit.explain.model import Unit
from profkit.explain.record import LaunchRecord
from profkit.explain.roofs import MEMORY_LEVELS


def busy_level(rec: LaunchRecord, ev: Evidence) -> Unit | None:
    """The memory level a memory-bound kernel is bound on. ncu's memory throughput (SOL) is the
    judge: DRAM when it is DRAM's level; a cache when it is well above DRAM's, then L1 or L2 by
    their own throughput. (L2's lts__throughput runs above DRAM's on a plain stream, 87% against
    70% on the fused RMSNorm, so it cannot name the level by itself.)"""
    dram, mem = rec.dram_pct, rec.memory_pct
    if dram is None:
        return None
    if mem is None or mem - dram < th.CACHE_BOUND_GAP_PCT:
        return Unit.DRAM
    # the busier cache level by its own throughput, quoted
    levels = [(getattr(rec, name), u, name) for name, u in MEMORY_LEVELS if u != Unit.DRAM]
    value, unit, name = max(((v, u, n) for v, u, n in levels if v is not None),
                            default=(None, None, ""), key=itemgetter(0))  # fmt: skip
    ev.put(LaunchRecord.column(name), value)
    return unit
