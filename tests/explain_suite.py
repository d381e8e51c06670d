"""A hold-out suite for `profkit explain`: kernels with known, deliberate causes.

Each spec below is a small profkit KernelSpec with a pathology chosen on purpose, and EXPECTED
states, before any run, what an expert would conclude from its counters: the bottleneck or the cause
explain must name, and a next step an expert accepts. tests/test_explain_suite.py checks explain's
conclusions on the stored capture (tests/data/runs/) against EXPECTED (and skips, saying why,
until it exists).

Capture on the H200 (four specs, about 3 minutes in all; reports stay small: few kernels each):

    python3 jobs/run.py jobs/explain_suite.toml     # runs land in $RUNS: promote their tables

which runs, per spec, `profkit capture SPEC --from tests/explain_suite.py`, then explain on each.

Written 2026-11-30, before any capture of these kernels.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from profkit.spec import KernelSpec, Variant

# --- what an expert concludes, written before any run ------------------------------------------
# Per case: `kernel`, `variant`, `dtype`, `shape` ("*" for any) select the case findings; `causes`
# must all be named (profkit.explain.model.Cause values), `steps` must all be among its next steps
# (Action values), `not_steps` never; `bottleneck` and `unit` when given must match; `host`: a
# host-bound finding must exist for the case; `verdict` applies to the lab variant's verdict;
# `outcome`, to its device-time comparisons at that dtype (faster/slower/noise/unstable).
EXPECTED = [
    # 1. A Triton matmul with tiles far too small (16x16x16, one warp): the Tensor Cores sit mostly
    #    idle next to their roof; larger tiles and more stages are the fix, never "use tl.dot"
    #    (it already does).
    {"kernel": "suite_matmul", "variant": "tiny_tiles", "dtype": "bfloat16", "shape": "*",
     "causes": ["tensor_underfed"], "steps": ["feed_tensor"], "not_steps": ["use_tensor_cores"]},
    # 2. cuBLAS bf16 on the Tensor Cores near their rate: library advice only.
    {"kernel": "suite_matmul", "variant": "cublas", "dtype": "bfloat16", "shape": "*",
     "bottleneck": "compute", "unit": "tensor", "causes": ["tensor_busy"],
     "steps": ["library_shapes"], "not_steps": ["use_tensor_cores", "feed_tensor"]},
    # 3. An fp32 GEMM without TF32 (PyTorch's default): cuBLAS runs it on the FMA pipe; the fix is
    #    TF32 (allow_tf32 / set_float32_matmul_precision) or bf16, never tl.dot.
    {"kernel": "suite_matmul", "variant": "cublas", "dtype": "float32", "shape": "*",
     "bottleneck": "compute", "unit": "fma", "causes": ["fp32_gemm_on_fma"],
     "steps": ["use_tf32"], "not_steps": ["use_tensor_cores"]},
    # ... and on device time it loses to cuBLAS in bf16 (in fp32 it runs TF32 against cuBLAS's
    # FMA-pipe SGEMM, so no outcome is claimed there)
    {"kernel": "suite_matmul", "variant": "tiny_tiles", "dtype": "bfloat16", "outcome": "slower"},
    # 4. An uncoalesced strided copy (each lane reads 4 bytes 32 bytes apart): memory-bound, most
    #    of every sector fetched is thrown away; change the layout so lanes read neighbouring
    #    addresses.
    {"kernel": "suite_strided", "variant": "strided", "dtype": "float32", "shape": "*",
     "bottleneck": "memory", "causes": ["uncoalesced"], "steps": ["coalesce"],
     "not_steps": ["use_tensor_cores", "raise_occupancy"]},
    {"kernel": "suite_strided", "variant": "torch_strided", "dtype": "float32", "shape": "*",
     "causes": ["uncoalesced"]},
    # 5. A shared-memory transpose through a 32x32 tile read by columns: 32-way bank conflicts;
    #    pad or swizzle the tile. The padded tile (33 columns) has none.
    {"kernel": "suite_bank", "variant": "smem_naive", "dtype": "float32", "shape": "*",
     "causes": ["bank_conflicts"], "steps": ["pad_shared"]},
    {"kernel": "suite_bank", "variant": "smem_padded", "dtype": "float32", "shape": "*",
     "not_causes": ["bank_conflicts"], "not_steps": ["pad_shared"]},
    # 6. An eager multi-kernel chain (tanh-GELU, 8-9 ATen launches): the time goes to memory-bound
    #    launches each crossing DRAM; fuse them. The fused Triton kernel beats it.
    {"kernel": "suite_chain", "variant": "eager", "dtype": "*", "shape": "16777216",
     "multi_launch": True, "causes": ["time_in_launches", "extra_passes"], "steps": ["fuse"],
     "not_steps": ["use_tensor_cores", "raise_occupancy", "more_programs"]},
    {"kernel": "suite_chain", "variant": "fused", "dtype": "*", "shape": "16777216",
     "bottleneck": "memory", "unit": "dram", "not_steps": ["use_tensor_cores", "fuse"]},
    {"kernel": "suite_chain", "variant": "fused", "verdict": "win"},
    # 7. Host-bound tiny case (4096 elements): one call costs the CPU far more than the GPU; CUDA
    #    graphs / fewer launches / torch.compile(mode="reduce-overhead").
    {"kernel": "suite_chain", "variant": "eager", "dtype": "*", "shape": "4096", "host": True},
    {"kernel": "suite_chain", "variant": "fused", "dtype": "*", "shape": "4096", "host": True},
]  # fmt: skip


# --- 1-3: matmul, tiles too small, and cuBLAS with and without the Tensor Cores ------------------


@triton.jit
def _matmul_kernel(A, B, C, M, N, K, BLOCK: tl.constexpr):
    # deliberately mistuned: 16x16 output tiles, BLOCK_K 16, one warp, no pipelining, so each
    # tile reloads A and B from L2 for every 16-wide step of K and the Tensor Cores wait
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    rm = pid_m * BLOCK + tl.arange(0, BLOCK)
    rn = pid_n * BLOCK + tl.arange(0, BLOCK)
    rk = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for k in range(0, K, BLOCK):
        a = tl.load(
            A + rm[:, None] * K + (k + rk)[None, :],
            mask=(rm[:, None] < M) & (k + rk < K)[None, :],
            other=0.0,
        )  # noqa: E501
        b = tl.load(
            B + (k + rk)[:, None] * N + rn[None, :],
            mask=(k + rk < K)[:, None] & (rn[None, :] < N),
            other=0.0,
        )  # noqa: E501
        acc += tl.dot(a, b)
    tl.store(C + rm[:, None] * N + rn[None, :], acc.to(C.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))  # fmt: skip


def matmul_tiny_tiles(inputs: dict) -> torch.Tensor:
    a, b, c = inputs["a"], inputs["b"], inputs["out"]
    (m, k), n = a.shape, b.shape[1]
    grid = (triton.cdiv(m, 16), triton.cdiv(n, 16))
    _matmul_kernel[grid](a, b, c, m, n, k, BLOCK=16, num_warps=1, num_stages=1)
    return c


def matmul_cublas(inputs: dict) -> torch.Tensor:
    # PyTorch's defaults: fp32 matmuls without TF32 (torch.backends.cuda.matmul.allow_tf32 False)
    return torch.matmul(inputs["a"], inputs["b"], out=inputs["out"])


def matmul_inputs(shape, dtype: str, device: str, generator: torch.Generator) -> dict:
    m, n, k = shape
    dt = getattr(torch, dtype)
    a = torch.randn((m, k), generator=generator, device=device).to(dt)
    b = torch.randn((k, n), generator=generator, device=device).to(dt)
    return {"a": a, "b": b, "out": torch.empty((m, n), device=device, dtype=dt)}


SUITE_MATMUL = KernelSpec(
    name="suite_matmul",
    description="explain hold-out: a matmul with tiles too small; cuBLAS bf16 and fp32 (no TF32)",
    variants=(
        Variant("tiny_tiles", matmul_tiny_tiles, description="Triton, 16x16x16 tiles, 1 warp"),
        Variant("cublas", matmul_cublas, baseline=True, description="torch.matmul (cuBLAS)"),
    ),
    make_inputs=matmul_inputs,
    reference=lambda i: i["a"].double() @ i["b"].double(),
    dtypes=("bfloat16", "float32"),
    # 4096^3: big enough that cuBLAS fills every SM for several waves (its bf16 kernel ran the
    # Tensor pipe at 95% there, tests/fixtures/fx_matmul)
    shapes=((4096, 4096, 4096),),
    # the Triton kernel's fp32 tl.dot runs in TF32 (10-bit mantissa) over K = 4096
    tolerances={"bfloat16": (0.5, 1e-2), "float32": (0.5, 1e-2)},
    bytes_moved=lambda s, size: (s[0] * s[2] + s[2] * s[1] + s[0] * s[1]) * size,
    flops=lambda s: 2 * s[0] * s[1] * s[2],
    interpret_shapes=((32, 32, 32), (48, 16, 32)),
)


# --- 4: an uncoalesced strided copy -------------------------------------------------------------

STRIDE = 8  # fp32 elements 32 bytes apart: every lane's 4 bytes sit in a sector of their own


@triton.jit
def _strided_copy_kernel(X, Y, n, STRIDE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(Y + offs, tl.load(X + offs * STRIDE, mask=mask), mask=mask)


def strided_triton(inputs: dict) -> torch.Tensor:
    y = inputs["out"]
    n = y.numel()
    _strided_copy_kernel[(triton.cdiv(n, 1024),)](inputs["x"], y, n, STRIDE=STRIDE, BLOCK=1024)
    return y


def strided_torch(inputs: dict) -> torch.Tensor:
    return inputs["out"].copy_(inputs["x"][::STRIDE])


def strided_inputs(shape, dtype: str, device: str, generator: torch.Generator) -> dict:
    (n,) = shape
    x = torch.randn(n * STRIDE, generator=generator, device=device).to(getattr(torch, dtype))
    return {"x": x, "out": torch.empty(n, device=device, dtype=x.dtype)}


SUITE_STRIDED = KernelSpec(
    name="suite_strided",
    description="explain hold-out: y = x[::8], an uncoalesced strided read",
    variants=(
        Variant("strided", strided_triton, description="Triton, lane i reads x[8 i]"),
        Variant("torch_strided", strided_torch, baseline=True, description="copy of x[::8]"),
    ),
    make_inputs=strided_inputs,
    reference=lambda i: i["x"].double()[::STRIDE],
    dtypes=("float32",),
    shapes=((1 << 24,),),
    tolerances={"float32": (0.0, 0.0)},
    bytes_moved=lambda s, size: 2 * s[0] * size,  # each output element read once, written once
    flops=lambda s: 0,
    interpret_shapes=((1000,), (64,)),
)


# --- 5: shared-memory bank conflicts (a CUDA kernel compiled with NVRTC through torch) -----------

_TRANSPOSE = r"""
extern "C" __global__ void transpose_TILE(const float* x, float* y, int n) {
    __shared__ float tile[32][COLS];
    int bx = blockIdx.x * 32, by = blockIdx.y * 32;
    for (int r = threadIdx.y; r < 32; r += blockDim.y)      // coalesced read, row-wise into smem
        tile[r][threadIdx.x] = x[(by + r) * n + bx + threadIdx.x];
    __syncthreads();
    for (int r = threadIdx.y; r < 32; r += blockDim.y)      // column-wise out of smem: with 32
        y[(bx + r) * n + by + threadIdx.x] = tile[threadIdx.x][r];  // columns all 32 lanes share
}                                                           // one bank; 33 spreads them
"""
_COMPILED: dict[str, object] = {}


def _transpose_kernel(cols: int):
    def prepare():
        name = f"transpose_{cols}"
        source = _TRANSPOSE.replace("TILE", str(cols)).replace("COLS", str(cols))
        compile_kernel = getattr(torch.cuda, "_compile_kernel", None)
        if compile_kernel is None:
            raise RuntimeError("this torch has no torch.cuda._compile_kernel (NVRTC)")
        kernel = _COMPILED.setdefault(name, compile_kernel(source, name))

        def run(inputs: dict) -> torch.Tensor:
            x, y = inputs["x"], inputs["out"]
            n = x.shape[0]
            kernel(grid=(n // 32, n // 32, 1), block=(32, 8, 1), args=[x, y, n])
            return y

        return run

    return prepare


def _cuda_only(inputs: dict) -> torch.Tensor:
    raise RuntimeError("a CUDA kernel: prepare() compiles it on a GPU")


def bank_inputs(shape, dtype: str, device: str, generator: torch.Generator) -> dict:
    n = shape[0]
    x = torch.randn((n, n), generator=generator, device=device).to(getattr(torch, dtype))
    return {"x": x, "out": torch.empty_like(x)}


SUITE_BANK = KernelSpec(
    name="suite_bank",
    description="explain hold-out: a transpose through shared memory, with and without padding",
    variants=(
        Variant(
            "smem_naive",
            _cuda_only,
            prepare=_transpose_kernel(32),
            description="32x32 tile read by columns: 32-way bank conflicts",
        ),
        Variant(
            "smem_padded",
            _cuda_only,
            prepare=_transpose_kernel(33),
            description="32x33 tile: conflict-free",
        ),
        Variant(
            "torch_transpose",
            lambda i: i["out"].copy_(i["x"].t()),
            baseline=True,
            description="copy of x.t()",
        ),
    ),  # fmt: skip
    make_inputs=bank_inputs,
    reference=lambda i: i["x"].double().t(),
    dtypes=("float32",),
    shapes=((4096,),),
    tolerances={"float32": (0.0, 0.0)},
    bytes_moved=lambda s, size: 2 * s[0] * s[0] * size,
    flops=lambda s: 0,
    interpret_shapes=((64,),),
)


# --- 6-7: an eager chain against a fused kernel, at a large and a tiny (host-bound) size --------

_C = 0.7978845608028654  # sqrt(2 / pi)


def gelu_eager(inputs: dict) -> torch.Tensor:
    # the tanh GELU written out as a model would: each op its own ATen launch
    x = inputs["x"]
    inner = _C * (x + 0.044715 * x * x * x)
    return 0.5 * x * (1.0 + torch.tanh(inner))


@triton.jit
def _gelu_kernel(X, Y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(X + offs, mask=mask).to(tl.float32)
    inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    t = 2.0 * tl.sigmoid(2.0 * inner) - 1.0  # tanh
    tl.store(Y + offs, (0.5 * x * (1.0 + t)).to(Y.dtype.element_ty), mask=mask)


def gelu_fused(inputs: dict) -> torch.Tensor:
    x, y = inputs["x"], inputs["out"]
    n = x.numel()
    _gelu_kernel[(triton.cdiv(n, 2048),)](x, y, n, BLOCK=2048, num_warps=8)
    return y


def chain_inputs(shape, dtype: str, device: str, generator: torch.Generator) -> dict:
    x = torch.randn(shape, generator=generator, device=device).to(getattr(torch, dtype))
    return {"x": x, "out": torch.empty_like(x)}


def gelu_reference(inputs: dict) -> torch.Tensor:
    x = inputs["x"].double()
    return 0.5 * x * (1.0 + torch.tanh(_C * (x + 0.044715 * x**3)))


SUITE_CHAIN = KernelSpec(
    name="suite_chain",
    description="explain hold-out: an eager tanh-GELU chain against one fused kernel",
    variants=(
        Variant("fused", gelu_fused, description="one Triton kernel"),
        Variant("eager", gelu_eager, baseline=True, description="eager PyTorch, one op per launch"),
    ),
    make_inputs=chain_inputs,
    reference=gelu_reference,
    dtypes=("float32",),
    shapes=((1 << 24,), (4096,)),
    tolerances={"float32": (1e-5, 1e-5)},
    bytes_moved=lambda s, size: 2 * s[0] * size,
    flops=lambda s: 10 * s[0],
    interpret_shapes=((1000,), (64,)),
)
