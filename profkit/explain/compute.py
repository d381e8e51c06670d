"""Compute-side causes: which pipe is busy, and whether the math is on the right one.

An elementwise op or a reduction is never told to move onto the Tensor Cores: only a case whose
model is a matrix product (FLOPs per byte far above an elementwise op's) or a GEMM library kernel
is. A library GEMM in fp32 on the FMA pipe gets TF32 or bf16, never `tl.dot`. A user matmul with
too few tiles for the SMs is told to launch more (smaller) tiles, never larger ones; one on a busy
Tensor pipe is pointed at a sibling that does the same FLOPs as fast, never told to do less math.
"""

from __future__ import annotations

from profkit import thresholds as th
from profkit.explain import catalogue
from profkit.explain.context import Context, Said
from profkit.explain.evidence import Evidence
from profkit.explain.kinds import KernelKind, Owner
from profkit.explain.model import Action, Advice, Cause, Reason, Unit
from profkit.explain.record import LaunchRecord
from profkit.explain.roofs import busiest_pipe
from profkit.explain.siblings import match


def pipe_unit(rec: LaunchRecord, ev: Evidence) -> Unit | None:
    pipe = busiest_pipe(rec)
    if pipe is None:
        return None
    unit, col, value = pipe
    ev.put(col, value)
    if unit == Unit.TENSOR or value >= th.TENSOR_IDLE_PCT:
        return unit
    return None


def pipe_detail(
    rec: LaunchRecord,
    ctx: Context,
    ev: Evidence,
    outcomes: catalogue.Outcomes,
    bound_on: Unit | None = None,
) -> Said | None:
    """A matrix product's pipes: the Tensor pipe busy, under-fed or unused, else the busiest
    other pipe at its peak (the catalogue's pipe entries, with a GEMM's remedy). `bound_on`: the
    pipe a compute-bound launch is bound on (pipe_unit)."""
    tensor = rec.tensor_pct
    gemm, library = rec.matrix, rec.owner == Owner.LIBRARY
    # quoted under the field it was read from (the record's fields are their columns' names)
    key = "tensor_any_pct" if rec.tensor_any_pct is not None else "tensor_pipe_pct"
    if tensor is not None:
        ev.put(key, tensor)
        if tensor >= th.TENSOR_BUSY_PCT:
            if library:
                near = Advice(Action.LIBRARY_SHAPES, [key], {"near_roof": True})
                return Reason(Cause.TENSOR_BUSY, [key]), [near]
            # a sibling doing the same FLOPs in the same or less time: less math is not the gap
            found = ctx.siblings.faster("flops") if ctx.siblings else None
            if found is not None:
                said = "faster" if found[1].outcome == "slower" else "same"
                return Reason(Cause.TENSOR_BUSY, [key], {"sibling": said}), [match("flops")]
            return Reason(Cause.TENSOR_BUSY, [key]), [Advice(Action.LESS_MATH, [key])]
        if rec.mma_kind is None and gemm and library:
            if ctx.dtype == "float32":
                return Reason(Cause.FP32_GEMM_ON_FMA, [key]), [Advice(Action.USE_TF32, [key])]
            return Reason(Cause.MATMUL_OFF_TENSOR, [key]), [Advice(Action.LIBRARY_SHAPES, [key])]
        if gemm and library:  # on the Tensor Cores, short of busy: its shape, not its code
            lib = {"library": str(rec.family)}
            if rec.kind == KernelKind.ATTENTION:  # a whole fused op: another backend first
                step = Advice(Action.LIBRARY_OPTIONS, [key], {**lib, "whole_op": "attention"})
            else:
                step = Advice(Action.LIBRARY_SHAPES, [key])
            return Reason(Cause.TENSOR_UNDERFED, [key], lib), [step]
        if rec.mma_kind is None and gemm:  # a user kernel with no MMA instructions at all
            if ctx.dtype == "float32":
                return Reason(Cause.MATMUL_OFF_TENSOR, [key], {"fp32": True}), [
                    Advice(Action.USE_TF32, [key]),
                    Advice(Action.USE_TENSOR_CORES, [key]),
                ]
            return Reason(Cause.MATMUL_OFF_TENSOR, [key]), [Advice(Action.USE_TENSOR_CORES, [key])]
        if gemm and not library and rec.grid_too_small:
            # too few tiles for the SMs: larger tiles would make fewer still
            return catalogue.said(outcomes, Cause.SMALL_GRID, rec.kind, ev)
        if gemm and not library:
            # it issues MMAs: under-fed when far below the pipe's roof (or, without the clock to
            # compute that roof, when the pipe is idle most cycles)
            roof = ev.get("pct_of_pipe_roof_pct")
            if (roof is not None and roof < th.UNDERFED_ROOF_PCT) or (
                roof is None and tensor < th.TENSOR_BUSY_PCT / 2
            ):
                keys = [key] + (["pct_of_pipe_roof_pct"] if roof is not None else [])
                return Reason(Cause.TENSOR_UNDERFED, keys), [Advice(Action.FEED_TENSOR, keys)]
    busy = catalogue.said(outcomes, Cause.PIPE_BUSY, KernelKind.GEMM, ev)
    if busy is None and bound_on == Unit.TENSOR and not library:
        # a user GEMM bound on the Tensor Cores short of their busy line: under-fed, judged on
        # the busy share (its roof share can sit in cuBLAS's range), said first; the dominant
        # stall, said after, tells how (the zoo's int8 GEMM: IMMA 69% busy, 67% of its roof,
        # barrier stalls at 63%). A library GEMM's shape is its user's lever: its cause says so
        return Reason(Cause.TENSOR_UNDERFED, [key], {"busy": True}), [
            Advice(Action.FEED_TENSOR, [key])
        ]
    return busy
