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


SMS = 132  # H200: one persistent program per SM


@triton.jit
def _gemm_kernel(
    A, BT, C, M, N, K,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr,
    PROGRAMS: tl.constexpr, PIECES: tl.constexpr, WIDEN: tl.constexpr,
):  # fmt: skip
    # the design of kernels/matmul.py's persistent kernel (92% Tensor busy at bf16 4096^3 on the
    # H200, 97% at 8192^3): one program per SM walks output tiles in grouped order; TMA descriptors
    # load the operands (bounds handled by the hardware, no masks) and store the epilogue in
    # PIECES column pieces of 32 KB (bf16 halves, int32 quarters), whose staging buffer then fits
    # beside 3 stages. The pointer-load tiled design of the first capture reached 56-59% with
    # barrier stalls dominant. int8 accumulates in int32.
    a_desc = tl.make_tensor_descriptor(A, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_desc = tl.make_tensor_descriptor(BT, shape=[N, K], strides=[K, 1], block_shape=[BN, BK])
    W: tl.constexpr = BN // PIECES
    c_desc = tl.make_tensor_descriptor(C, shape=[M, N], strides=[N, 1], block_shape=[BM, W])
    acc_type = tl.int32 if A.dtype.element_ty == tl.int8 else tl.float32
    n_m, n_n = tl.cdiv(M, BM), tl.cdiv(N, BN)
    width = GROUP_M * n_n
    tile_c = tl.program_id(0) - PROGRAMS  # the epilogue's own counter (kernels/matmul.py)
    for tile in tl.range(tl.program_id(0), n_m * n_n, PROGRAMS, flatten=True):
        first_m = (tile // width) * GROUP_M
        size_m = tl.minimum(n_m - first_m, GROUP_M)
        pid_m = first_m + (tile % width) % size_m
        pid_n = (tile % width) // size_m
        acc = tl.zeros((BM, BN), dtype=acc_type)
        for ki in range(tl.cdiv(K, BK)):
            a = a_desc.load([pid_m * BM, ki * BK])
            b = b_desc.load([pid_n * BN, ki * BK]).T  # K-major B: what 8-bit wgmma wants
            if WIDEN:
                acc += tl.dot(a.to(tl.float32), b.to(tl.float32)).to(acc_type)
            else:
                acc = tl.dot(a, b, acc, out_dtype=acc_type)
        tile_c += PROGRAMS
        first_m = (tile_c // width) * GROUP_M
        size_m = tl.minimum(n_m - first_m, GROUP_M)
        pid_m = first_m + (tile_c % width) % size_m
        pid_n = (tile_c % width) // size_m
        c0, c1 = _halves(acc, BM, BN)
        out_type = C.dtype.element_ty
        if PIECES == 4:
            q0, q1 = _halves(c0, BM, BN // 2)
            q2, q3 = _halves(c1, BM, BN // 2)
            c_desc.store([pid_m * BM, pid_n * BN], q0.to(out_type))
            c_desc.store([pid_m * BM, pid_n * BN + W], q1.to(out_type))
            c_desc.store([pid_m * BM, pid_n * BN + 2 * W], q2.to(out_type))
            c_desc.store([pid_m * BM, pid_n * BN + 3 * W], q3.to(out_type))
        else:
            c_desc.store([pid_m * BM, pid_n * BN], c0.to(out_type))
            c_desc.store([pid_m * BM, pid_n * BN + W], c1.to(out_type))


@triton.jit
def _halves(x, ROWS: tl.constexpr, COLS: tl.constexpr):
    # the left and right column halves of a ROWS x COLS block
    return tl.split(tl.permute(tl.reshape(x, (ROWS, 2, COLS // 2)), (0, 2, 1)))


def _tma_scratch(size: int, alignment: int, stream) -> torch.Tensor:
    # device-side tensor descriptors need a little global memory per program
    return torch.empty(size, device="cuda", dtype=torch.int8)


def gemm(inputs: dict) -> torch.Tensor:
    a, bt, c = inputs["a"], inputs["bt"], inputs["out"]
    (m, k), n = a.shape, bt.shape[0]
    if a.is_cuda:
        triton.set_allocator(_tma_scratch)
    # a 128-wide K step of int8 is the bytes of a 64-wide bf16 one: 3 x 48 KB of operand stages;
    # its int32 tile is twice bf16's bytes, so it is stored in quarters (the first int8 capture's
    # halves took a 64 KB staging buffer, with IMMA 61.5% busy)
    int8 = a.dtype == torch.int8
    bk, pieces = (128, 4) if int8 else (64, 2)
    programs = min(SMS, triton.cdiv(m, 128) * triton.cdiv(n, 256))
    _gemm_kernel[(programs,)](
        a, bt, c, m, n, k, BM=128, BN=256, BK=bk, GROUP_M=8, PROGRAMS=programs, PIECES=pieces,
        WIDEN=WIDEN, num_warps=8, num_stages=3,
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
    # int8: |sum| <= K x 128^2 = 2^28 at K = 16384, exact in float64 (and in int32)
    return inputs["a"].double() @ inputs["bt"].double().t()


def cublas(inputs: dict) -> torch.Tensor:
    return torch.matmul(inputs["a"], inputs["bt"].t(), out=inputs["out"])


def _gemm_bytes(s, size: int) -> int:
    return (s[0] * s[2] + s[2] * s[1]) * size + s[0] * s[1] * (4 if size == 1 else size)


ZOO_GEMM_BF16 = KernelSpec(
    name="zoo_gemm_bf16",
    description="zoo: a persistent TMA bf16 tl.dot GEMM (128x256x64, 8 warps, 3 stages)",
    variants=(Variant("tiled", gemm, description="persistent tl.dot, TMA, 128x256x64"),),
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
    variants=(Variant("tiled", gemm, description="persistent tl.dot, TMA, 128x256x128"),),
    make_inputs=gemm_inputs,
    reference=gemm_reference,
    dtypes=("int8",),
    # 550 G integer ops: 0.43 ms, IMMA 69% busy (capture of 2026-12-02 03:00). K = 16384, not
    # 4096, so what each tile costs outside its K loop (the int32 epilogue, not overlapped with
    # the next tile's loads) weighs a quarter as much: IMMA ran 61.5% busy at 4096^3
    shapes=((4096, 4096, 16384),),
    tolerances={"int8": (0.0, 0.0)},
    bytes_moved=_gemm_bytes,
    flops=lambda s: 2 * s[0] * s[1] * s[2],
    # TMA wants 16-byte row strides: K = 48 int8 bytes (bf16's K = 40 is 80 bytes)
    interpret_shapes=((32, 32, 32), (48, 16, 48)),
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


# --- a tl.dot GEMM with tiles too large for its registers, and one in fp32 off the Tensor Cores --


@triton.jit
def _tile_gemm_kernel(
    A, BT, C, M, N, K,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, PRECISION: tl.constexpr,
    WIDEN: tl.constexpr,
):  # fmt: skip
    # a plain tiled GEMM (pointer loads, one output tile a program, grouped by 8 rows of tiles)
    pid = tl.program_id(0)
    n_m, n_n = tl.cdiv(M, BM), tl.cdiv(N, BN)
    first_m = (pid // (8 * n_n)) * 8
    size_m = tl.minimum(n_m - first_m, 8)
    pid_m = first_m + (pid % (8 * n_n)) % size_m
    pid_n = (pid % (8 * n_n)) // size_m
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(
            A + rm[:, None] * K + (k + rk)[None, :],
            mask=(rm[:, None] < M) & ((k + rk)[None, :] < K),
            other=0.0,
        )
        b = tl.load(BT + rn[None, :] * K + (k + rk)[:, None],
                    mask=(rn[None, :] < N) & ((k + rk)[:, None] < K), other=0.0)  # fmt: skip
        if WIDEN:
            acc += tl.dot(a.to(tl.float32), b.to(tl.float32), input_precision="ieee")
        else:
            acc = tl.dot(a, b, acc, input_precision=PRECISION)
    tl.store(C + rm[:, None] * N + rn[None, :], acc.to(C.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))  # fmt: skip


def _tile_gemm(bm: int, bn: int, bk: int, warps: int, stages: int, precision: str = "tf32"):
    def run(inputs: dict) -> torch.Tensor:
        a, bt, c = inputs["a"], inputs["bt"], inputs["out"]
        (m, k), n = a.shape, bt.shape[0]
        grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
        _tile_gemm_kernel[grid](
            a, bt, c, m, n, k, BM=bm, BN=bn, BK=bk, PRECISION=precision,
            WIDEN=WIDEN and a.dtype == torch.bfloat16, num_warps=warps, num_stages=stages,
        )  # fmt: skip
        return c

    return run


ZOO_GEMM_SPILL = KernelSpec(
    name="zoo_gemm_spill",
    description="zoo: a bf16 tl.dot GEMM, 256x256 tiles on 4 warps (the accumulator spills), "
    "and 128x256 on 8",
    variants=(
        Variant(
            "tiles_256",
            _tile_gemm(256, 256, 64, 4, 3),
            description="256x256x64, 4 warps: 512 fp32 accumulators a thread",
        ),
        Variant(
            "tiles_128",
            _tile_gemm(128, 256, 64, 8, 3),
            description="128x256x64, 8 warps: 128 a thread",
        ),
    ),  # fmt: skip
    make_inputs=gemm_inputs,
    reference=gemm_reference,
    dtypes=("bfloat16",),
    shapes=((4096, 4096, 4096),),  # 137 GFLOP: ~0.2-0.3 ms near the roof, spilled: several x
    tolerances={"bfloat16": (0.5, 1e-2)},
    bytes_moved=_gemm_bytes,
    flops=lambda s: 2 * s[0] * s[1] * s[2],
    interpret_shapes=((32, 32, 64), (48, 16, 64)),
)

ZOO_GEMM_FP32 = KernelSpec(
    name="zoo_gemm_fp32",
    description="zoo: an fp32 tl.dot GEMM with input_precision='ieee' (FFMA) and 'tf32'",
    variants=(
        Variant(
            "ieee",
            _tile_gemm(128, 128, 32, 8, 3, "ieee"),
            description="tl.dot ieee: FMA pipe, no Tensor Cores",
        ),
        Variant("tf32", _tile_gemm(128, 128, 32, 8, 3, "tf32"), description="tl.dot tf32"),
    ),  # fmt: skip
    make_inputs=gemm_inputs,
    reference=gemm_reference,
    dtypes=("float32",),
    # 17 GFLOP: ieee on the FMA pipe (~67 TFLOP/s peak) ~0.3-0.5 ms; tf32 several times faster
    shapes=((2048, 2048, 2048),),
    tolerances={"float32": (0.5, 1e-2)},
    bytes_moved=_gemm_bytes,
    flops=lambda s: 2 * s[0] * s[1] * s[2],
    interpret_shapes=((32, 32, 32), (48, 16, 64)),
)
