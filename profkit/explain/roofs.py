"""The roofs a case is measured against: one compute roof per pipe and dtype, and memory roofs
for DRAM (the large copy and a copy of the case's own size), L2 and L1.

Compute roofs are the SM count times a clock times the architecture's rate per SM per clock
(profkit.peaks, shared with the dashboard), for the pipe the kernel was measured on: IMMA -> the
int8 roof, DMMA -> FP64 Tensor, HMMA/GMMA -> the kind the dtype label names (fp16/bf16, TF32 for
float32, FP8), no MMA -> the FMA or FP64 pipe, whichever works; the label alone decides only where
no pipe counter was captured. A GPU or pipe the table has no rate for gets the run's measured
matmul ceiling where it is the same kind, and a note saying so.

The achieved rate comes from the device time, so the roof is taken at the clock sampled while that
case was timed (sm_clock_mhz, NVML), and at ncu's clock only where the timing has none: under a
power cap the counter pass and the timing can run hundreds of MHz apart (matmul run f75dcf: 1602
against 1822 MHz), and a roof at the other pass's clock misstates the share. A kernel whose clock
dropped is judged against the roof at that clock, and the run's measured matmul ceiling stands
beside it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from operator import itemgetter

from profkit import peaks
from profkit import thresholds as th
from profkit.explain.evidence import Evidence, num, text
from profkit.explain.model import Unit
from profkit.explain.record import LaunchRecord

# record field (its column is the evidence key) -> the unit it names; the Tensor pipe reads the
# all-types counter where captured
PIPES: tuple[tuple[str, Unit], ...] = (
    ("tensor_any_pct", Unit.TENSOR),
    ("tensor_pipe_pct", Unit.TENSOR),
    ("fma_pipe_pct", Unit.FMA),
    ("alu_pipe_pct", Unit.ALU),
    ("xu_pipe_pct", Unit.XU),
    ("lsu_pipe_pct", Unit.LSU),
    ("fp64_pipe_pct", Unit.FP64),
)
MEMORY_LEVELS: tuple[tuple[str, Unit], ...] = (
    ("dram_pct", Unit.DRAM),
    ("l2_pct", Unit.L2),
    ("l1_pct", Unit.L1),
)


@dataclass(frozen=True)
class Device:
    """What the roofs read from the run's manifest."""

    sm_count: int | None = None
    compute_capability: str | None = None
    copy_gbps: float | None = None  # the run's large device copy (bytes read + written)
    matmul_tflops: float | None = None
    matmul_dtype: str | None = None
    gpu: str | None = None  # the board's name (some rates are board-specific: peaks.Board)

    @classmethod
    def of(cls, manifest: Mapping) -> Device:
        fp, ceil = manifest.get("fingerprint") or {}, manifest.get("ceilings") or {}
        sm = num(fp, "sm_count")
        return cls(
            int(sm) if sm else None,
            str(fp["compute_capability"]) if fp.get("compute_capability") else None,
            num(ceil, "copy_gbps"),
            num(ceil, "matmul_tflops"),
            ceil.get("matmul_dtype"),
            text(fp, "gpu"),
        )


def device_of_row(rec: LaunchRecord, base: Device) -> Device:
    """The run's device, completed from a launch's own device attributes (reports)."""
    sm, major, minor = rec.sm_count, rec.cc_major, rec.cc_minor
    cc = f"{int(major)}.{int(minor)}" if major is not None and minor is not None else None
    return Device(
        base.sm_count or (int(sm) if sm else None),
        base.compute_capability or cc,
        base.copy_gbps,
        base.matmul_tflops,
        base.matmul_dtype,
        base.gpu,
    )


def busiest_pipe(rec: LaunchRecord) -> tuple[Unit, str, float] | None:
    """The pipe with the highest utilization among those captured (unit, column, value)."""
    found: dict[Unit, tuple[Unit, str, float]] = {}
    for name, unit in PIPES:
        value = getattr(rec, name)
        if value is not None and unit not in found:
            found[unit] = (unit, LaunchRecord.column(name), value)
    return max(found.values(), key=itemgetter(2)) if found else None


def roof_pipe(rec: LaunchRecord, dtype: str) -> tuple[str | None, str]:
    """The peaks kind the case is judged against, from the pipe ncu measured (the label only
    names the HMMA kind, or stands in where no pipe counter was captured), and why."""
    label = peaks.LABEL_TENSOR_PIPE.get(dtype)
    if rec.mma_kind is not None:
        sub = rec.tensor_subpipe
        if sub == "imma":
            return "tensor_int8", "IMMA pipe"
        if sub == "dmma":
            return "tensor_fp64", "DMMA pipe"
        if sub == "hmma":
            if label in ("tensor_fp16", "tensor_tf32", "tensor_fp8"):
                return label, f"HMMA pipe, {dtype} label"
            return None, f"HMMA pipe with a {dtype or 'missing'} label: its operand type is unknown"
        if label:
            return label, f"Tensor pipe (sub-pipe not captured), {dtype} label"
        return None, f"Tensor pipe with a {dtype or 'missing'} label: its MMA kind is unknown"
    fp64, fma = rec.fp64_pipe_pct, rec.fma_pipe_pct
    if fp64 is None:
        return peaks.label_vector_pipe(dtype), f"no FP64 pipe counter, {dtype or 'no'} label"
    works = fp64 >= th.PIPE_IN_USE_PCT and (dtype == "float64" or fma is None or fp64 >= fma)
    return ("fp64_fma", "FP64 pipe") if works else ("fp32_fma", "FMA pipe")


@dataclass(frozen=True)
class PipeRoof:
    """The compute roof a row is judged against: its peaks kind (None when the pipe's kind is
    unknown), the peak in FLOP/s (OP/s for int8; None when neither the table nor the run gives
    one), where it comes from (or why there is none), and the clock where derived from the table."""

    kind: str | None
    peak_flops: float | None
    source: str
    clock_mhz: float | None = None


def pipe_roof(rec: LaunchRecord, dtype: str, device: Device) -> PipeRoof:
    """The roof of the pipe the row's math runs on (roof_pipe), from the per-SM table at the
    row's clock; on a GPU or pipe the table lacks, the run's measured matmul ceiling where it is
    that kind."""
    kind, why = roof_pipe(rec, dtype)
    if kind is None:
        return PipeRoof(None, None, why)
    clock = rec.sm_clock_mhz or rec.ncu_sm_clock_mhz  # timed at, else ncu's (module docstring)
    cc, gpu = device.compute_capability, device.gpu
    derived = peaks.peak(cc, kind, device.sm_count, clock, gpu)
    if derived is not None:
        return PipeRoof(kind, derived[0], f"{why}: {derived[1]}", clock)
    gap = (
        peaks.missing(cc, kind, gpu)
        if peaks.rate(cc, kind, gpu) is None
        else "no SM count or clock to derive the roof from"
    )
    measured = device.matmul_tflops
    if measured and peaks.LABEL_TENSOR_PIPE.get(str(device.matmul_dtype)) == kind:
        return PipeRoof(
            kind, measured * 1e12, f"measured: the run's {device.matmul_dtype} matmul ({gap})"
        )
    return PipeRoof(kind, None, gap)


def compute_roof(rec: LaunchRecord, dtype: str, device: Device, ev: Evidence) -> float | None:
    """The achieved FLOP rate against the roof of the pipe the case runs on (pipe_roof), at the
    clock it was timed at (else ncu's), and against the run's measured matmul where the dtype and
    the pipe's kind match it. Records the evidence; where the table has no rate, roof_note says
    why and what the case is judged against instead. Returns the share of the pipe's roof."""
    flops, ms = rec.model_flops, rec.device_p50_ms
    if not flops or not ms:
        return None
    achieved = flops / (ms * 1e-3) / 1e12
    ev.put("achieved_tflops", achieved)
    roof = pipe_roof(rec, dtype, device)
    if roof.peak_flops and roof.clock_mhz:
        tflops = roof.peak_flops / 1e12
        ev.put("roof_pipe", roof.kind)
        ev.put("roof_clock_mhz", roof.clock_mhz)
        ev.put("pipe_roof_tflops", tflops)
        ev.put("pct_of_pipe_roof_pct", achieved / tflops * 100)
    elif roof.kind is None or peaks.rate(device.compute_capability, roof.kind, device.gpu) is None:
        ev.put("roof_note", roof.source)
    measured_kind = peaks.LABEL_TENSOR_PIPE.get(str(device.matmul_dtype))
    if (
        device.matmul_tflops
        and device.matmul_dtype == dtype
        and rec.mma_kind is not None
        and roof.kind == measured_kind
    ):
        ev.put("matmul_tflops", device.matmul_tflops)
        ev.put("pct_of_measured_matmul_pct", achieved / device.matmul_tflops * 100)
    return ev.get("pct_of_pipe_roof_pct")


def memory_roof(rec: LaunchRecord, ev: Evidence) -> float | None:
    """The copy roof's figures (LaunchRecord.copy_roof: the record carries the device's large
    copy) put in `ev`; returns the share of the roof the case is judged against."""
    figures, share = rec.copy_roof
    for key, value in figures.items():
        ev.put(key, value)
    return share


def near_copy_line(rec: LaunchRecord) -> float:
    """The share of the judged roof at which a stream counts as at the roof."""
    return th.NEAR_SAME_SIZE_COPY_PCT if rec.copy_gbps_same_size else th.NEAR_COPY_CEILING_PCT
