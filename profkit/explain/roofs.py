"""The roofs a case is measured against: one compute roof per pipe and dtype, and memory roofs
for DRAM (the large copy and a copy of the case's own size), L2 and L1.

Compute roofs are the SM count times a clock times the architecture's rate per SM per clock. The
achieved rate comes from the device time, so the roof is taken at the clock sampled while that
case was timed (sm_clock_mhz, NVML), and at ncu's clock only where the timing has none: under a
power cap the counter pass and the timing can run hundreds of MHz apart (matmul run f75dcf: 1602
against 1822 MHz), and a roof at the other pass's clock misstates the share. A kernel whose clock
dropped is judged against the roof at that clock, and the run's measured matmul ceiling stands
beside it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from profkit import thresholds as th
from profkit.explain.evidence import Evidence, num
from profkit.explain.model import Unit

# Dense FLOP (or integer OP) per SM per clock, sm_90 (H100/H200). Source: NVIDIA H100 Tensor Core
# GPU Architecture whitepaper (per-SM rates: 128 FP32 and 64 FP64 lanes, fourth-generation Tensor
# Cores at 2x A100's per-SM rate: A100's 312 TFLOP/s bf16 = 108 SMs x 1.41 GHz x 2048).
PER_SM_PER_CLOCK: dict[str, dict[str, int]] = {
    "9.0": {
        "fp32_fma": 256,
        "fp64_fma": 128,
        "tensor_fp16": 4096,  # fp16 and bf16 inputs, fp32 accumulate
        "tensor_tf32": 2048,
        "tensor_fp8": 8192,
        "tensor_int8": 8192,
        "tensor_fp64": 256,
    },
}

# dtype of the case -> (the Tensor Core roof it would use, the non-tensor pipe roof)
_DTYPE_ROOFS = {
    "float16": ("tensor_fp16", "fp32_fma"),
    "bfloat16": ("tensor_fp16", "fp32_fma"),
    "float32": ("tensor_tf32", "fp32_fma"),
    "float8_e4m3fn": ("tensor_fp8", "fp32_fma"),
    "float8_e5m2": ("tensor_fp8", "fp32_fma"),
    "int8": ("tensor_int8", "fp32_fma"),
    "float64": ("tensor_fp64", "fp64_fma"),
}

# pipe column -> the unit it names; the Tensor pipe reads the all-types counter where captured
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
    ("dram_throughput_pct", Unit.DRAM),
    ("l2_throughput_pct", Unit.L2),
    ("l1_throughput_pct", Unit.L1),
)


@dataclass(frozen=True)
class Device:
    """What the roofs read from the run's manifest."""

    sm_count: int | None = None
    compute_capability: str | None = None
    copy_gbps: float | None = None  # the run's large device copy (bytes read + written)
    matmul_tflops: float | None = None
    matmul_dtype: str | None = None

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
        )


def device_of_row(row: Mapping, base: Device) -> Device:
    """The run's device, completed from a launch's own device attributes (reports)."""
    sm, major, minor = num(row, "sm_count"), num(row, "cc_major"), num(row, "cc_minor")
    cc = f"{int(major)}.{int(minor)}" if major is not None and minor is not None else None
    return Device(
        base.sm_count or (int(sm) if sm else None),
        base.compute_capability or cc,
        base.copy_gbps,
        base.matmul_tflops,
        base.matmul_dtype,
    )


def busiest_pipe(row: Mapping) -> tuple[Unit, str, float] | None:
    """The pipe with the highest utilization among those captured (unit, column, value)."""
    found: dict[Unit, tuple[str, float]] = {}
    for col, unit in PIPES:
        value = num(row, col)
        if value is not None and unit not in found:
            found[unit] = (col, value)
    if not found:
        return None
    unit, (col, value) = max(found.items(), key=lambda kv: kv[1][1])
    return unit, col, value


def tensor_pct(row: Mapping) -> float | None:
    any_type = num(row, "tensor_any_pct")
    return any_type if any_type is not None else num(row, "tensor_pipe_pct")


def on_tensor_cores(row: Mapping) -> bool:
    """Does the case's math run on the Tensor Cores (it issues MMAs)? ncu's tensor pipe also
    counts HFMA2.MMA, which ptxas uses to move constants: kernels with no MMA read up to 4.1%
    there (torch.softmax, run a879b0) while their FMA pipe does more; MMA math keeps the tensor
    pipe busier than the FMA pipe."""
    tensor, fma = tensor_pct(row), num(row, "fma_pipe_pct")
    return tensor is not None and tensor >= th.TENSOR_UNUSED_PCT and (fma is None or tensor >= fma)


def compute_roof(row: Mapping, dtype: str, device: Device, ev: Evidence) -> None:
    """The achieved FLOP rate against the roof of the pipe the case runs on, at the clock it was
    timed at (else ncu's), and against the run's measured matmul where the dtype matches.
    Records evidence only."""
    flops, ms = num(row, "flops"), num(row, "device_p50_ms")
    if not flops or not ms:
        return
    achieved = flops / (ms * 1e-3) / 1e12
    ev.put("achieved_tflops", achieved)
    rates = PER_SM_PER_CLOCK.get(device.compute_capability or "")
    clock = num(row, "sm_clock_mhz") or num(row, "ncu_sm_clock_mhz")
    on_tensor = on_tensor_cores(row)  # then judged against the Tensor Cores' roof
    roofs = _DTYPE_ROOFS.get(dtype)
    if rates and clock and device.sm_count and roofs:
        pipe = roofs[0] if on_tensor else roofs[1]
        roof = device.sm_count * clock * 1e6 * rates[pipe] / 1e12
        ev.put("roof_pipe", pipe)
        ev.put("roof_clock_mhz", clock)
        ev.put("pipe_roof_tflops", roof)
        ev.put("pct_of_pipe_roof_pct", achieved / roof * 100)
    if device.matmul_tflops and device.matmul_dtype == dtype and on_tensor:
        ev.put("matmul_tflops", device.matmul_tflops)
        ev.put("pct_of_measured_matmul_pct", achieved / device.matmul_tflops * 100)


def memory_roof(row: Mapping, device: Device, ev: Evidence) -> float | None:
    """The case's model bytes over its device time against the large copy and a copy of the same
    size; returns the share of the roof it is judged against (the same-size copy where the run
    measured one, else the large copy)."""
    min_bytes, ms = num(row, "bytes"), num(row, "device_p50_ms")
    if not min_bytes or not ms:
        return None
    gbps = min_bytes / (ms * 1e-3) / 1e9
    ev.put("achieved_gbps", gbps)
    large = device.copy_gbps
    if large:
        ev.put("copy_gbps", large)
        ev.put("pct_of_copy_pct", gbps / large * 100)
    same = num(row, "copy_gbps_same_size")
    if same:
        ev.put("copy_gbps_same_size", same)
        ev.put("pct_of_same_size_copy_pct", gbps / same * 100)
        return ev["pct_of_same_size_copy_pct"]
    if large:
        ev.put("same_size_roof", "unknown")
        return ev["pct_of_copy_pct"]
    return None


def near_copy_line(row: Mapping) -> float:
    """The share of the judged roof at which a stream counts as at the roof."""
    return (
        th.NEAR_SAME_SIZE_COPY_PCT if num(row, "copy_gbps_same_size") else th.NEAR_COPY_CEILING_PCT
    )
