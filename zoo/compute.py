"""Pathology zoo, compute: elementwise chains that keep one SM pipe (or the issue slots) busy.

Each element runs a loop of dependent operations; every thread holds several elements, so the
chains are independent and the pipe, not latency, limits. None is a matrix product: GEMM advice
(TF32, tl.dot, tiles) is wrong for all of them. Shapes are (elements, iterations).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from profkit.spec import KernelSpec, Variant


def _randn(shape, dtype: str, device: str, gen: torch.Generator) -> torch.Tensor:
    return torch.randn(shape, generator=gen, device=device).to(getattr(torch, dtype))


def chain_inputs(shape, dtype, device, gen) -> dict:
    n, iters = shape
    x = _randn((n,), dtype, device, gen)
    return {"x": x, "iters": iters, "out": torch.empty_like(x)}


# --- FMA chains: fp32 (FMA pipe) and fp64 (DFMA, the FP64 pipe) --------------------------------

A, B = 0.999, 0.001  # x -> a x + b contracts towards 1: no overflow whatever the length


@triton.jit
def _fma_chain_kernel(X, AB, Y, n, iters, BLOCK: tl.constexpr):
    # BLOCK / (32 x 4 warps) elements per thread, each its own dependent chain of fused
    # multiply-adds (Triton contracts x * a + b to one FMA); a and b are loaded in the input's
    # dtype, so the float64 reference uses exactly the same coefficients
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < n
    x = tl.load(X + offs, mask=ok, other=0.0)
    a = tl.load(AB)
    b = tl.load(AB + 1)
    for _ in range(iters):
        x = x * a + b
    tl.store(Y + offs, x, mask=ok)


def fma_chain(inputs: dict) -> torch.Tensor:
    x, y = inputs["x"], inputs["out"]
    n = x.numel()
    _fma_chain_kernel[(triton.cdiv(n, 1024),)](x, inputs["ab"], y, n, inputs["iters"], BLOCK=1024)
    return y


def fma_inputs(shape, dtype, device, gen) -> dict:
    x = chain_inputs(shape, dtype, device, gen)
    return {**x, "ab": torch.tensor([A, B], device=device, dtype=x["x"].dtype)}


def chain_reference(inputs: dict) -> torch.Tensor:
    x = inputs["x"].double()
    a, b = inputs["ab"].double().tolist()
    for _ in range(inputs["iters"]):
        x = x * a + b
    return x


def _chain_spec(name: str, dtype: str, shape, description: str) -> KernelSpec:
    return KernelSpec(
        name=name,
        description=description,
        variants=(Variant("chain", fma_chain, description="Triton, 8 chains per thread"),),
        make_inputs=fma_inputs,
        reference=chain_reference,
        dtypes=(dtype,),
        shapes=(shape,),
        tolerances={dtype: (1e-5, 1e-5) if dtype == "float32" else (1e-12, 1e-12)},
        bytes_moved=lambda s, size: 2 * s[0] * size,
        flops=lambda s: 2 * s[0] * s[1],
        interpret_shapes=((1000, 7), (64, 3)),
    )


# 2^24 fp32 x 256 FMA: 8.6 GFLOP, ~130 us on the FMA pipe (67 TFLOP/s), 128 MB (~30 us) moved
ZOO_FMA = _chain_spec(
    "zoo_fma", "float32", (1 << 24, 256), "zoo: an fp32 elementwise FMA chain (FMA pipe)"
)
# 2^22 fp64 x 256 DFMA: 2.1 GFLOP, ~65 us on the FP64 pipe (34 TFLOP/s), 64 MB moved
ZOO_FP64 = _chain_spec(
    "zoo_fp64", "float64", (1 << 22, 256), "zoo: an fp64 elementwise DFMA chain (FP64 pipe)"
)


# --- integer hash mixing: shifts, xors and adds only (the ALU pipe; no IMAD) --------------------


@triton.jit
def _xorshift_kernel(X, Y, n, iters, BLOCK: tl.constexpr):
    # xorshift32 on each input's bits, plus a round constant: SHF, LOP3 and IADD3, all ALU-pipe
    # instructions (a multiply would run on the FMA pipe as IMAD)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < n
    h = tl.load(X + offs, mask=ok, other=0.0).to(tl.uint32, bitcast=True)
    for _ in range(iters):
        h ^= h << 13
        h ^= h >> 17
        h ^= h << 5
        h += 0x9E3779B9
    tl.store(Y + offs, h.to(tl.int32, bitcast=True), mask=ok)


def xorshift(inputs: dict) -> torch.Tensor:
    x, y = inputs["x"], inputs["out"]
    n = x.numel()
    _xorshift_kernel[(triton.cdiv(n, 1024),)](x, y, n, inputs["iters"], BLOCK=1024)
    return y


def hash_inputs(shape, dtype, device, gen) -> dict:
    n, iters = shape
    x = _randn((n,), dtype, device, gen)
    out = torch.full((n,), -1, dtype=torch.int32, device=device)  # an exact integer output
    return {"x": x, "iters": iters, "out": out}


def xorshift_reference(inputs: dict) -> torch.Tensor:
    m = 0xFFFFFFFF
    h = inputs["x"].float().view(torch.int32).long() & m
    for _ in range(inputs["iters"]):
        h ^= (h << 13) & m
        h ^= h >> 17
        h ^= (h << 5) & m
        h = (h + 0x9E3779B9) & m
    return torch.where(h >= 1 << 31, h - (1 << 32), h).double()  # as int32


ZOO_INT_ALU = KernelSpec(
    name="zoo_int_alu",
    description="zoo: xorshift32 hash rounds on each element's bits (integer ALU pipe)",
    variants=(Variant("xorshift", xorshift, description="Triton, 128 rounds per element"),),
    make_inputs=hash_inputs,
    reference=xorshift_reference,
    dtypes=("float32",),  # the input; the output is int32, checked exactly
    # 2^22 x 128 rounds x ~7 ALU ops: 3.8 G ops at ~16.7 T/s on the ALU pipe, ~0.2 ms
    shapes=((1 << 22, 128),),
    tolerances={"float32": (0.0, 0.0)},
    bytes_moved=lambda s, size: 2 * s[0] * size,
    flops=lambda s: 0,  # integer work
    interpret_shapes=((1000, 7), (64, 3)),
)


# --- special functions: exp2 and rsqrt (MUFU, the XU pipe) -------------------------------------


@triton.jit
def _xu_kernel(X, Y, n, iters, BLOCK: tl.constexpr):
    # y -> rsqrt(2^(-y/2) + 1) stays in [0.7, 1]; two MUFU ops (EX2, RSQ) per step against two
    # FMA-pipe ops, and MUFU runs at 1/8 of the FMA rate: the XU pipe limits
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < n
    y = tl.abs(tl.load(X + offs, mask=ok, other=0.0))
    for _ in range(iters):
        y = tl.math.rsqrt(tl.math.exp2(y * -0.5) + 1.0)
    tl.store(Y + offs, y, mask=ok)


def xu_chain(inputs: dict) -> torch.Tensor:
    x, y = inputs["x"], inputs["out"]
    n = x.numel()
    _xu_kernel[(triton.cdiv(n, 1024),)](x, y, n, inputs["iters"], BLOCK=1024)
    return y


def xu_reference(inputs: dict) -> torch.Tensor:
    y = inputs["x"].double().abs()
    for _ in range(inputs["iters"]):
        y = torch.rsqrt(torch.exp2(y * -0.5) + 1.0)
    return y


ZOO_XU = KernelSpec(
    name="zoo_xu",
    description="zoo: an exp2/rsqrt chain per element (special-function XU pipe)",
    variants=(Variant("exp_rsqrt", xu_chain, description="Triton, 64 exp2+rsqrt steps"),),
    make_inputs=chain_inputs,
    reference=xu_reference,
    dtypes=("float32",),
    # 2^22 x 64 steps x 2 MUFU: 537 M at ~4.2 T/s (16 per SM per clock), ~130 us
    shapes=((1 << 22, 64),),
    tolerances={"float32": (1e-5, 1e-5)},
    bytes_moved=lambda s, size: 2 * s[0] * size,
    flops=lambda s: 4 * s[0] * s[1],
    interpret_shapes=((1000, 7), (64, 3)),
)


# --- instruction issue: a mix that fills the issue slots, no pipe near its rate ----------------


@triton.jit
def _mix_kernel(X, Y, n, iters, BLOCK: tl.constexpr):
    # per step: four independent FFMAs (FMA pipe, 1 issue each) and two integer ops (ALU pipe,
    # half rate): 6 issues, FMA pipe ~4/6 and ALU ~4/6 busy, the scheduler issuing every cycle
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < n
    x = tl.load(X + offs, mask=ok, other=0.0)
    a, b, c, d = x, x + 1.0, x - 1.0, x * 0.5
    h = x.to(tl.uint32, bitcast=True)
    for _ in range(iters):
        a = a * 0.999 + 0.001
        b = b * 0.999 + 0.002
        c = c * 0.999 + 0.003
        d = d * 0.999 + 0.004
        h = (h ^ 0x5BD1E995) + 0x3C6EF372
    mixed = (h & 1023).to(tl.float32) * 0.001
    tl.store(Y + offs, a + b + c + d + mixed, mask=ok)


def mix(inputs: dict) -> torch.Tensor:
    x, y = inputs["x"], inputs["out"]
    n = x.numel()
    _mix_kernel[(triton.cdiv(n, 256),)](x, y, n, inputs["iters"], BLOCK=256, num_warps=8)
    return y


def _f32(v: float) -> float:
    """v as the kernel sees it: a float literal in a Triton kernel is an fp32 constant."""
    return float(torch.tensor(v, dtype=torch.float32))


def mix_reference(inputs: dict) -> torch.Tensor:
    x = inputs["x"].double()
    a, b, c, d = x, x + 1.0, x - 1.0, x * 0.5
    k, b1, b2, b3, b4 = (_f32(v) for v in (0.999, 0.001, 0.002, 0.003, 0.004))
    m = 0xFFFFFFFF
    h = inputs["x"].float().view(torch.int32).long() & m
    for _ in range(inputs["iters"]):
        a, b, c, d = a * k + b1, b * k + b2, c * k + b3, d * k + b4
        h = ((h ^ 0x5BD1E995) + 0x3C6EF372) & m
    return a + b + c + d + (h & 1023).double() * 0.001


ZOO_ISSUE = KernelSpec(
    name="zoo_issue",
    description="zoo: four FMA chains and an integer chain interleaved: issue-bound",
    variants=(Variant("mix", mix, description="Triton, 4 FFMA + 2 ALU ops per step"),),
    make_inputs=chain_inputs,
    reference=mix_reference,
    dtypes=("float32",),
    # 2^22 threads x 256 steps x ~6 instructions: 200 M warp instructions at 4 per SM per
    # clock, ~190 us
    shapes=((1 << 22, 256),),
    tolerances={"float32": (1e-4, 1e-5)},
    bytes_moved=lambda s, size: 2 * s[0] * size,
    flops=lambda s: 8 * s[0] * s[1],
    interpret_shapes=((1000, 7), (64, 3)),
)
