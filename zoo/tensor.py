"""Pathology zoo, Tensor Cores: a well-tiled bf16 GEMM, an int8 GEMM (IMMA: its roof is int8's,
about twice bf16's), and a cuBLAS bf16 GEMM long and hot enough to reach the H200's power cap.

B is given transposed (N x K, K contiguous): 8-bit wgmma wants both operands K-major, and one
layout for both dtypes keeps the kernels the same.
"""

from __future__ import annotations

import os

import torch
import triton
import triton.language as tl

from profkit.spec import KernelSpec, Variant

# the interpreter's bf16 tl.dot is broken (kernels/matmul.py _widen): widen there only
WIDEN = os.environ.get("TRITON_INTERPRET") == "1"


@triton.jit
def _gemm_kernel(
    A, BT, C, M, N, K,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr,
    WIDEN: tl.constexpr,
):  # fmt: skip
    # the standard Hopper design: 128x256 tiles, grouped tile order for L2 reuse, num_stages
    # pipelined loads; int8 accumulates in int32, bf16 in fp32
    pid = tl.program_id(0)
    n_m, n_n = tl.cdiv(M, BM), tl.cdiv(N, BN)
    group = pid // (GROUP_M * n_n)
    first_m = group * GROUP_M
    size_m = min(n_m - first_m, GROUP_M)
    pid_m = first_m + (pid % (GROUP_M * n_n)) % size_m
    pid_n = (pid % (GROUP_M * n_n)) // size_m
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = A + rm[:, None] * K + rk[None, :]
    b_ptrs = BT + rn[None, :] * K + rk[:, None]  # a BK x BN tile of B, K contiguous
    acc_type = tl.int32 if A.dtype.element_ty == tl.int8 else tl.float32
    acc = tl.zeros((BM, BN), dtype=acc_type)
    for k in range(0, K, BK):
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < K - k), other=0)
        b = tl.load(b_ptrs, mask=(rk[:, None] < K - k) & (rn[None, :] < N), other=0)
        if WIDEN:
            a, b = a.to(tl.float32), b.to(tl.float32)
            acc += tl.dot(a, b).to(acc_type)
        else:
            acc = tl.dot(a, b, acc, out_dtype=acc_type)
        a_ptrs += BK
        b_ptrs += BK
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    tl.store(C + rm[:, None] * N + rn[None, :], acc.to(C.dtype.element_ty), mask=mask)


def gemm(inputs: dict) -> torch.Tensor:
    a, bt, c = inputs["a"], inputs["bt"], inputs["out"]
    (m, k), n = a.shape, bt.shape[0]
    bk = 128 if a.dtype == torch.int8 else 64
    grid = (triton.cdiv(m, 128) * triton.cdiv(n, 256),)
    _gemm_kernel[grid](
        a, bt, c, m, n, k, BM=128, BN=256, BK=bk, GROUP_M=8, WIDEN=WIDEN,
        num_warps=8, num_stages=3,
    )  # fmt: skip
    return c


def gemm_inputs(shape, dtype, device, gen) -> dict:
    m, n, k = shape
    if dtype == "int8":
        a = torch.randint(-128, 128, (m, k), generator=gen, device=device, dtype=torch.int8)
        bt = torch.randint(-128, 128, (n, k), generator=gen, device=device, dtype=torch.int8)
        out = torch.full((m, n), -1, dtype=torch.int32, device=device)  # exact int32 result
    else:
        dt = getattr(torch, dtype)
        a = torch.randn((m, k), generator=gen, device=device).to(dt)
        bt = torch.randn((n, k), generator=gen, device=device).to(dt)
        out = torch.empty((m, n), dtype=dt, device=device)
    return {"a": a, "bt": bt, "out": out}


def gemm_reference(inputs: dict) -> torch.Tensor:
    # int8: |sum| <= 4096 x 128^2 = 2^26, exact in float64 (and in int32)
    return inputs["a"].double() @ inputs["bt"].double().t()


def cublas(inputs: dict) -> torch.Tensor:
    return torch.matmul(inputs["a"], inputs["bt"].t(), out=inputs["out"])


def _gemm_bytes(s, size: int) -> int:
    return (s[0] * s[2] + s[2] * s[1]) * size + s[0] * s[1] * (4 if size == 1 else size)


ZOO_GEMM_BF16 = KernelSpec(
    name="zoo_gemm_bf16",
    description="zoo: a well-tiled bf16 tl.dot GEMM (128x256x64, 8 warps, 3 stages)",
    variants=(Variant("tiled", gemm, description="Triton tl.dot, grouped 128x256 tiles"),),
    make_inputs=gemm_inputs,
    reference=gemm_reference,
    dtypes=("bfloat16",),
    shapes=((4096, 4096, 4096),),  # 137 GFLOP: ~0.2 ms near the bf16 roof
    tolerances={"bfloat16": (0.5, 1e-2)},
    bytes_moved=_gemm_bytes,
    flops=lambda s: 2 * s[0] * s[1] * s[2],
    interpret_shapes=((32, 32, 32), (48, 16, 40)),
)

ZOO_GEMM_INT8 = KernelSpec(
    name="zoo_gemm_int8",
    description="zoo: an int8 tl.dot GEMM, int32 accumulate (IMMA; roof ~2x bf16's)",
    variants=(Variant("tiled", gemm, description="Triton tl.dot, grouped 128x256x128 tiles"),),
    make_inputs=gemm_inputs,
    reference=gemm_reference,
    dtypes=("int8",),
    shapes=((4096, 4096, 4096),),  # 137 G integer ops: ~0.1-0.2 ms on the IMMA pipe
    tolerances={"int8": (0.0, 0.0)},
    bytes_moved=_gemm_bytes,
    flops=lambda s: 2 * s[0] * s[1] * s[2],
    interpret_shapes=((32, 32, 32), (48, 16, 40)),
)

ZOO_GEMM_POWER = KernelSpec(
    name="zoo_gemm_power",
    description="zoo: cuBLAS bf16 8192^3, long and hot enough to reach the power cap",
    variants=(Variant("cublas", cublas, baseline=True, description="torch.matmul (cuBLAS)"),),
    make_inputs=gemm_inputs,
    reference=gemm_reference,
    dtypes=("bfloat16",),
    # 1.1 TFLOP, ~1.5 ms a call: the lab's captures of this shape ran at 1485-1612 of 1980 MHz
    # with sw_power_cap set (profiles/matmul-*, cublas bf16 8192x8192x8192)
    shapes=((8192, 8192, 8192),),
    tolerances={"bfloat16": (1.0, 1e-2)},
    bytes_moved=_gemm_bytes,
    flops=lambda s: 2 * s[0] * s[1] * s[2],
    interpret_shapes=((32, 32, 32),),
)
