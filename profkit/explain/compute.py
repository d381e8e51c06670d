"""Compute-side: which pipe a compute-bound launch is bound on. Whether the math is on the right
pipe is the catalogue's Tensor entry (an elementwise op or a reduction is never told to move onto
the Tensor Cores: only a matrix product is; a library GEMM in fp32 on the FMA pipe gets TF32 or
bf16, never `tl.dot`), and a busy pipe is a PIPE_BUSY entry.
"""

from __future__ import annotations

from profkit import thresholds as th
from profkit.explain.evidence import Evidence
from profkit.explain.model import Unit
from profkit.explain.record import LaunchRecord
from profkit.explain.roofs import busiest_pipe


def pipe_unit(rec: LaunchRecord, ev: Evidence) -> Unit | None:
    pipe = busiest_pipe(rec)
    if pipe is None:
        return None
    unit, col, value = pipe
    ev.put(col, value)
    if unit == Unit.TENSOR or value >= th.TENSOR_IDLE_PCT:
        return unit
    return None
