"""Per-SM peak rates by compute capability: the one table explain's roofs and the dashboard's
roofline both read.

A rate is dense FLOP (integer OP for int8) per SM per clock: an FMA is 2. A peak is that rate x
the SM count x a clock; the table holds no clock and no SM count, because the run records both
(explain takes the clock the case was timed at, the dashboard the fingerprint's maximum). Rates
were derived from NVIDIA's published figures as total rate over (SMs x clock), or as a ratio to
the FP32 figure of the same table (same SMs, same clock), and each entry names where they come
from. A rate the sources found did not settle is left out, and the entry says why: a kernel on
that pipe gets the run's measured roofs only. Sparse (2:4) rates are never used.

Pipes: fp32_fma and fp64_fma (the FMA and FP64 pipes), and the Tensor Core rates tensor_fp16
(fp16 and bf16 inputs, fp32 accumulate), tensor_tf32, tensor_int8, tensor_fp8 and tensor_fp64
(DMMA).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

PIPES = (
    "fp32_fma",
    "fp64_fma",
    "tensor_fp16",
    "tensor_tf32",
    "tensor_int8",
    "tensor_fp8",
    "tensor_fp64",
)
# how a roof of each pipe is named on a page
PIPE_NAMES = {
    "fp32_fma": "FP32 FMA",
    "fp64_fma": "FP64 FMA",
    "tensor_fp16": "FP16/BF16 Tensor Core",
    "tensor_tf32": "TF32 Tensor Core",
    "tensor_int8": "INT8 Tensor Core",
    "tensor_fp8": "FP8 Tensor Core",
    "tensor_fp64": "FP64 Tensor Core",
}

# A dtype label -> the Tensor Core pipe its matmul would run as, and its non-tensor pipe. Only the
# label's guess: the roof explain judges a kernel against follows the pipe ncu measured
# (explain.roofs.pipe_roof).
LABEL_TENSOR_PIPE = {
    "float16": "tensor_fp16",
    "bfloat16": "tensor_fp16",
    "float32": "tensor_tf32",
    "float8_e4m3fn": "tensor_fp8",
    "float8_e5m2": "tensor_fp8",
    "int8": "tensor_int8",
    "float64": "tensor_fp64",
}
# the pipes that run on the Tensor Cores
TENSOR_PIPES = frozenset(LABEL_TENSOR_PIPE.values())


def label_vector_pipe(dtype: str) -> str:
    return "fp64_fma" if dtype == "float64" else "fp32_fma"


@dataclass(frozen=True)
class Board:
    """Rates that hold only on boards whose name matches `match` (GeForce boards run some Tensor
    Core pipes at a different rate than the professional boards of the same chip)."""

    match: str  # a regular expression searched in the GPU's name, case-insensitive
    rates: Mapping[str, int]
    source: str


@dataclass(frozen=True)
class Arch:
    cc: str
    name: str
    rates: Mapping[str, int]  # pipe -> FLOP (or OP) per SM per clock, on every board of this cc
    source: str
    left_out: Mapping[str, str] = field(default_factory=dict)  # pipe -> why it is not listed
    boards: tuple[Board, ...] = ()


TABLE: dict[str, Arch] = {
    a.cc: a
    for a in (
        Arch(
            "8.0",
            "Ampere GA100 (A100)",
            {
                "fp32_fma": 128,
                "fp64_fma": 64,
                "tensor_fp16": 2048,
                "tensor_tf32": 1024,
                "tensor_int8": 4096,
                "tensor_fp64": 128,
            },
            "NVIDIA A100 Tensor Core GPU Architecture whitepaper, Table 1 (A100 peak rates, dense: "
            "FP64 9.7, FP64 Tensor 19.5, FP32 19.5, TF32 156, FP16/BF16 312 TFLOP/s, INT8 624 "
            "TOP/s) over 108 SMs x 1410 MHz; the same A100 column in the H100 whitepaper's Table 3",
            {"tensor_fp8": "GA100 has no FP8 Tensor Core path"},
        ),
        Arch(
            "8.6",
            "Ampere GA10x (RTX 30, A40, A10)",
            {"fp32_fma": 256},
            "NVIDIA Ampere GA102 GPU Architecture whitepaper (GA10x SM: 128 FP32 lanes, '2x FP32')",
            {
                "fp64_fma": "not sourced: the GA10x FP64 rate was not found in the documents "
                "searched",
                "tensor_fp8": "GA10x has no FP8 Tensor Core path",
                "tensor_fp64": "GA10x Tensor Cores have no FP64 (DMMA) path",
                "tensor_fp16": "board-specific (see boards); other boards: not sourced",
                "tensor_tf32": "board-specific (see boards); other boards: not sourced",
                "tensor_int8": "board-specific (see boards); other boards: not sourced",
            },
            (
                Board(
                    r"\bA40\b",
                    {"tensor_fp16": 1024, "tensor_tf32": 512, "tensor_int8": 2048},
                    "NVIDIA A40 datasheet, dense figures as ratios to its FP32 37.4 TFLOP/s: "
                    "BF16 Tensor with FP32 accumulate 149.7 (4x), TF32 74.8 (2x), INT8 299.3 "
                    "TOP/s (8x), times 256 FP32 FLOP/clk/SM",
                ),
                Board(
                    "GeForce",
                    {"tensor_fp16": 512, "tensor_tf32": 256},
                    "NVIDIA Ampere GA102 GPU Architecture whitepaper, Table 6 (GA10x SM: 512 "
                    "dense FP16 FMA/clk = 1024 FLOP, FP16 accumulate); GeForce boards run FP32 "
                    "accumulate at half that and TF32 at a quarter (a worked RTX 3060 Ti example; "
                    "RTX 3090: FP32 35.6, FP16 Tensor 71 TFLOP/s, 2x). INT8 on GeForce GA10x: not "
                    "sourced",
                ),
            ),
        ),
        Arch(
            "8.9",
            "Ada AD10x (RTX 40, L40)",
            {"fp32_fma": 256},
            "NVIDIA Ada GPU Architecture whitepaper (AD10x SM: 128 FP32 lanes)",
            {
                "fp64_fma": "not sourced: the AD10x FP64 rate was not found in the documents "
                "searched",
                "tensor_fp64": "AD10x Tensor Cores have no FP64 (DMMA) path",
                "tensor_fp16": "GeForce only (see boards); professional boards: not sourced",
                "tensor_tf32": "GeForce only (see boards); professional boards: not sourced",
                "tensor_int8": "GeForce only (see boards); professional boards: not sourced",
                "tensor_fp8": "GeForce only (see boards); professional boards: not sourced",
            },
            (
                Board(
                    "GeForce",
                    {
                        "tensor_fp16": 512,
                        "tensor_tf32": 256,
                        "tensor_int8": 2048,
                        "tensor_fp8": 1024,
                    },
                    "NVIDIA Ada GPU Architecture whitepaper, Appendix A (GeForce RTX 4090, dense, "
                    "as ratios to its FP32 82.6 TFLOP/s: FP16/BF16 Tensor with FP32 accumulate "
                    "165.2 (2x), TF32 82.6 (1x), FP8 330.3 (4x), INT8 660.6 TOP/s (8x)), times "
                    "256 FP32 FLOP/clk/SM; the figures as a spec database lists them, the "
                    "whitepaper's own table was not retrieved",
                ),
            ),
        ),
        Arch(
            "9.0",
            "Hopper GH100 (H100, H200)",
            {
                "fp32_fma": 256,
                "fp64_fma": 128,
                "tensor_fp16": 4096,
                "tensor_tf32": 2048,
                "tensor_int8": 8192,
                "tensor_fp8": 8192,
                "tensor_fp64": 256,
            },
            "NVIDIA H100 Tensor Core GPU Architecture whitepaper (H100 SM: 128 FP32 and 64 FP64 "
            "lanes; 4th-generation Tensor Cores at 2x A100's per-SM rate clock for clock on "
            "FP16/BF16, TF32, FP64 and INT8, FP8 at 2x FP16), checked on H100 SXM5 totals: FP32 "
            "66.9 TFLOP/s = 132 SMs x 256 x 1980 MHz, FP16/BF16 989.4 = 132 x 4096 x 1830 MHz",
        ),
        Arch(
            "10.0",
            "Blackwell GB100 (B200)",
            {"fp32_fma": 256, "fp64_fma": 128, "tensor_fp64": 128},
            "NVIDIA HGX B200 datasheet (FP32 75, FP64 and FP64 Tensor Core 37 TFLOP/s: FP64 at "
            "half the FP32 rate, FP64 Tensor no faster than FP64) with 128 FP32 lanes per SM",
            {
                pipe: "not sourced: NVIDIA gives B200 totals only (FP16/BF16 2.25 PFLOP/s dense, "
                "30x its FP32 figure, at a Tensor clock it does not state), so no per-SM rate "
                "follows without guessing the clock"
                for pipe in ("tensor_fp16", "tensor_tf32", "tensor_int8", "tensor_fp8")
            },
        ),
        Arch(
            "12.0",
            "Blackwell GB20x (RTX 50, RTX PRO)",
            {"fp32_fma": 256},
            "NVIDIA RTX Blackwell GPU Architecture whitepaper (GB20x SM: 128 FP32 lanes; RTX 5090: "
            "170 SMs, FP32 104.8 TFLOP/s = 170 x 256 x 2407 MHz), as spec pages quote it",
            {
                "fp64_fma": "not sourced: the GB20x FP64 rate was not found in the documents "
                "searched",
                "tensor_fp64": "GB20x Tensor Cores have no FP64 (DMMA) path",
                **{
                    pipe: "not sourced: the figures found (RTX 5090 FP16 Tensor 838.4 and FP8 "
                    "1676.8 TFLOP/s sparse) do not say which accumulate they assume, and GeForce "
                    "boards halve FP32 accumulate"
                    for pipe in ("tensor_fp16", "tensor_tf32", "tensor_int8", "tensor_fp8")
                },
            },
        ),
    )
}


def arch(cc: str | None) -> Arch | None:
    return TABLE.get(str(cc)) if cc else None


def rate(cc: str | None, pipe: str, gpu: str | None = None) -> tuple[int, str] | None:
    """The per-SM rate of `pipe` on this device, with its source; None where the table has none."""
    a = arch(cc)
    if a is None:
        return None
    for board in a.boards:
        if gpu and re.search(board.match, gpu, re.IGNORECASE) and pipe in board.rates:
            return board.rates[pipe], board.source
    if pipe in a.rates:
        return a.rates[pipe], a.source
    return None


def missing(cc: str | None, pipe: str, gpu: str | None = None) -> str:
    """Why the table gives no rate for `pipe` on this device (one line)."""
    a = arch(cc)
    if a is None:
        known = ", ".join(TABLE)
        return (
            f"no per-SM rates for compute capability {cc or 'unknown'} (profkit.peaks covers "
            f"{known}): measured roofs only"
        )
    why = a.left_out.get(pipe, "not in the table")
    return f"{PIPE_NAMES.get(pipe, pipe)} on {a.name}: {why}; measured roofs only"


def peak(
    cc: str | None,
    pipe: str,
    sm_count: float | None,
    clock_mhz: float | None,
    gpu: str | None = None,
) -> tuple[float, str] | None:
    """rate x SMs x clock in FLOP/s (OP/s for int8), with how it was derived; None without a rate,
    an SM count or a clock."""
    found = rate(cc, pipe, gpu)
    if found is None or not sm_count or not clock_mhz:
        return None
    per_sm, source = found
    how = f"{sm_count:.0f} SMs x {per_sm} FLOP/clk x {clock_mhz:.0f} MHz ({source})"
    return sm_count * per_sm * clock_mhz * 1e6, how
