"""SwiGLU forward: y = silu(a) * b = a * sigmoid(a) * b, elementwise (an LLM MLP's gate).

The lab's Triton kernel against three baselines: eager PyTorch (F.silu(a) * b, two kernels and
an intermediate), torch.compile of it, and Liger-Kernel's LigerSiLUMulFunction (the optional
extra [peers]). Minimum traffic: read a and b once, write y once.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from profkit.compile_baseline import compile_per_shape
from profkit.spec import KernelSpec, Variant


@triton.jit
def _swiglu_kernel(
    A,
    B,
    Y,
    n,
    BLOCK: tl.constexpr,
    EVEN: tl.constexpr,
):
    # a and b are contiguous and the same shape, so the op is one flat stream, vector_add's
    # (two reads, one write): no rows and no row masks (Liger's one row per program leaves 16
    # programs at 16x14336 and masks 2048 lanes of each 16384-wide row)
    # one 64-bit base per program, 32-bit offsets inside it (RMSNorm's register lesson)
    start = tl.program_id(0).to(tl.int64) * BLOCK
    offs = tl.arange(0, BLOCK)
    a_ptrs, b_ptrs, y_ptrs = A + start + offs, B + start + offs, Y + start + offs
    if EVEN:
        a = tl.load(a_ptrs)
        b = tl.load(b_ptrs)
    else:
        mask = offs < n - start
        a = tl.load(a_ptrs, mask=mask, other=0.0)
        b = tl.load(b_ptrs, mask=mask, other=0.0)
    af = a.to(tl.float32)
    # silu in fp32, one rounding at the store (eager and Liger round silu(a), then the product)
    y = (af / (1.0 + tl.exp(-af)) * b.to(tl.float32)).to(Y.dtype.element_ty)
    if EVEN:
        tl.store(y_ptrs, y)
    else:
        tl.store(y_ptrs, y, mask=mask)


@dataclass(frozen=True)
class Config:
    """One launch: BLOCK elements per program over num_warps warps."""

    block: int
    warps: int


def launch_config(n: int) -> Config:
    """vector_add's measured shape for the same stream (kernels/NOTES.md, vector_add session 3):
    1024 elements per 4-warp program at every size, one 16-byte load of a and one of b per thread
    in 16-bit. There 16 KB per 8-warp program (more bytes in flight per thread) ran 0.4-1.1%
    behind torch.add, and this shape tied it: many small programs stream as well and retire
    without a tail. 16x14336 gets 224 programs; 16384x14336, 229376."""
    return Config(1024, 4)


def swiglu_triton(inputs: dict, config: Config | None = None) -> torch.Tensor:
    a, b, out = inputs["a"], inputs["b"], inputs["out"]
    if not (a.is_contiguous() and b.is_contiguous()):  # the kernel reads one flat stream
        a, b = a.contiguous(), b.contiguous()
    n = a.numel()
    cfg = config or launch_config(n)
    _swiglu_kernel[(triton.cdiv(n, cfg.block),)](
        a, b, out, n, BLOCK=cfg.block, EVEN=n % cfg.block == 0, num_warps=cfg.warps
    )
    return out


def swiglu_eager(inputs: dict) -> torch.Tensor:
    return F.silu(inputs["a"]) * inputs["b"]


def _compiled() -> callable:
    return compile_per_shape(swiglu_eager)


def _liger() -> callable:
    """Liger-Kernel's SwiGLU forward (its gate and down multipliers 1, as eager). Imported when
    first used, once per capture (the variant's prepare): Liger is an optional extra."""
    from liger_kernel.ops import LigerSiLUMulFunction

    return lambda inputs: LigerSiLUMulFunction.apply(inputs["a"], inputs["b"])


def swiglu_liger(inputs: dict) -> torch.Tensor:
    return _liger()(inputs)


def make_inputs(shape, dtype: str, device: str, generator: torch.Generator) -> dict:
    dt = getattr(torch, dtype)
    a = torch.randn(shape, generator=generator, device=device, dtype=torch.float32).to(dt)
    b = torch.randn(shape, generator=generator, device=device, dtype=torch.float32).to(dt)
    return {"a": a, "b": b, "out": torch.empty_like(a)}


def reference(inputs: dict) -> torch.Tensor:
    a, b = inputs["a"].double(), inputs["b"].double()
    return a * torch.sigmoid(a) * b


SPEC = KernelSpec(
    name="swiglu",
    description="SwiGLU forward: silu(a) * b, elementwise",
    variants=(
        Variant("triton", swiglu_triton, description="Triton: one flat stream, 1024 per program"),
        Variant("eager", swiglu_eager, baseline=True, description="F.silu(a) * b"),
        Variant(
            "compile",
            swiglu_eager,
            baseline=True,
            prepare=_compiled,
            description="torch.compile of the eager code",
        ),
        Variant(
            "liger",
            swiglu_liger,
            baseline=True,
            prepare=_liger,
            requires=("liger_kernel",),
            interpretable=False,  # its scalar gate_multiplier.to(...) fails in the interpreter
            description="Liger-Kernel's LigerSiLUMulFunction (extra [peers])",
        ),
    ),
    make_inputs=make_inputs,
    reference=reference,
    dtypes=("bfloat16", "float16"),
    # an MLP's intermediate width (Llama 3 8B: 14336) at decode (16, 128) and prefill token counts
    shapes=((16, 14336), (128, 14336), (1024, 14336), (4096, 14336), (16384, 14336)),
    # relative: eager rounds twice (silu, then the product), and the interpreter truncates bf16
    # (one more ulp); fp16's subnormals (under 6e-5) round to 2^-24 absolute
    tolerances={"bfloat16": (1e-5, 2e-2), "float16": (1e-6, 4e-3)},
    bytes_moved=lambda shape, itemsize: 3 * shape[0] * shape[1] * itemsize,
    flops=lambda shape: 5 * shape[0] * shape[1],  # exp, add, divide, multiply by a and by b
    interpret_shapes=((4, 64), (3, 100), (2, 1024)),
)
