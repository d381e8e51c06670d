"""Pathology zoo, hand-written CUDA (compiled with NVRTC through torch.cuda._compile_kernel, as
bench/explain_suite.py does): causes Triton cannot be made to show, since it owns shared-memory
layout and keeps control flow warp-uniform. Shared-memory bank conflicts and their padded twin;
per-lane data-dependent loop trip counts (branch divergence) and the same work sorted so each
warp's lanes agree. Triton's interpreter cannot run these: their tests skip.
"""

from __future__ import annotations

import torch

from profkit.spec import KernelSpec, Variant

_COMPILED: dict[str, object] = {}


def _compiled(source: str, name: str):
    compile_kernel = getattr(torch.cuda, "_compile_kernel", None)
    if compile_kernel is None:
        raise RuntimeError("this torch has no torch.cuda._compile_kernel (NVRTC)")
    if name not in _COMPILED:
        _COMPILED[name] = compile_kernel(source, name)
    return _COMPILED[name]


def _cuda_only(inputs: dict) -> torch.Tensor:
    raise RuntimeError("a CUDA kernel: prepare() compiles it on a GPU")


# --- bank conflicts: a transpose through a 64x64 tile read by columns, and a 64x65 tile --------

# 16 loads in flight per thread (64x64 tile, 32x8 threads): the first capture's 32x32 tile had 4,
# too few bytes in flight to stream (its padded twin ran at 53% of DRAM, latency-bound)
_TRANSPOSE = r"""
extern "C" __global__ void zoo_transpose_COLS(const float* x, float* y, int n) {
    __shared__ float tile[64][COLS];
    int bx = blockIdx.x * 64, by = blockIdx.y * 64, tx = threadIdx.x, ty = threadIdx.y;
#pragma unroll
    for (int i = 0; i < 16; ++i) {            // coalesced row-wise reads into shared memory
        int r = ty + 8 * (i % 8), c = tx + 32 * (i / 8);
        tile[r][c] = x[(long long)(by + r) * n + bx + c];
    }
    __syncthreads();
#pragma unroll
    for (int i = 0; i < 16; ++i) {            // column-wise out of shared memory: with 64 columns
        int r = ty + 8 * (i % 8), c = tx + 32 * (i / 8);  // a warp's 32 lanes share one bank;
        y[(long long)(bx + r) * n + by + c] = tile[c][r];  // 65 spread them over all 32
    }
}
"""


def _transpose(cols: int):
    def prepare():
        name = f"zoo_transpose_{cols}"
        kernel = _compiled(_TRANSPOSE.replace("COLS", str(cols)), name)

        def run(inputs: dict) -> torch.Tensor:
            x, y = inputs["x"], inputs["out"]
            n = x.shape[0]
            kernel(grid=(n // 64, n // 64, 1), block=(32, 8, 1), args=[x, y, n])
            return y

        return run

    return prepare


def square_inputs(shape, dtype, device, gen) -> dict:
    (n,) = shape
    x = torch.randn((n, n), generator=gen, device=device).to(getattr(torch, dtype))
    return {"x": x, "out": torch.empty_like(x)}


ZOO_BANK = KernelSpec(
    name="zoo_bank",
    description="zoo: a shared-memory transpose, 64x64 tile (32-way conflicts) and 64x65",
    variants=(
        Variant("conflicted", _cuda_only, prepare=_transpose(64), description="64x64 tile"),
        Variant("padded", _cuda_only, prepare=_transpose(65), description="64x65 tile"),
    ),
    make_inputs=square_inputs,
    reference=lambda i: i["x"].double().t(),
    dtypes=("float32",),
    shapes=((8192,),),  # 256 MB each way: ~120 us at the copy roof
    tolerances={"float32": (0.0, 0.0)},
    bytes_moved=lambda s, size: 2 * s[0] * s[0] * size,
    flops=lambda s: 0,
    interpret_shapes=((64,),),
)


# --- branch divergence: per-lane loop trip counts from the data --------------------------------

# 8 dependent FMAs per step: the loop's own instructions stay a small share of the issue slots
_STEPS = tuple(range(1, 9))
_TRIPS = r"""
extern "C" __global__ void zoo_trips_ORDERED(const float* x, const int* count,
                                             const int* order, float* y, int n) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n) return;
    float v = x[j];                   // sorted: x and count arrive sorted by count, longest first,
    int c = count[j];                 // so a warp's lanes agree (and the longest blocks go first)
    for (int k = 0; k < c; ++k) {     // 0..255 at random: a warp runs its slowest lane's count
"""
_TRIPS += "".join(f"        v = v * {1 - k / 1000:.3f}f + {k / 1000:.3f}f;\n" for k in _STEPS)
_TRIPS += r"""    }
    y[ORDERED ? order[j] : j] = v;    // sorted: the result goes back to its element's place
}
"""


def _trips(sorted_order: bool):
    def prepare():
        ordered = int(sorted_order)
        kernel = _compiled(_TRIPS.replace("ORDERED", str(ordered)), f"zoo_trips_{ordered}")
        x_key, count_key = ("x_sorted", "count_sorted") if sorted_order else ("x", "count")

        def run(inputs: dict) -> torch.Tensor:
            x, y = inputs[x_key], inputs["out"]
            n = x.numel()
            kernel(
                grid=((n + 255) // 256, 1, 1),
                block=(256, 1, 1),
                args=[x, inputs[count_key], inputs["order"], y, n],
            )
            return y

        return run

    return prepare


def trips_inputs(shape, dtype, device, gen) -> dict:
    (n,) = shape
    x = torch.randn(n, generator=gen, device=device).to(getattr(torch, dtype))
    count = torch.randint(0, 256, (n,), generator=gen, device=device, dtype=torch.int32)
    # the sorted twin's layout, made outside the timed call: the first capture's twin read x and
    # count through the order (a gather: 5.6x the ideal sectors, latency-bound), not the point
    order = torch.argsort(count, descending=True, stable=True)
    return {
        "x": x,
        "count": count,
        "order": order.to(torch.int32),
        "x_sorted": x[order],
        "count_sorted": count[order],
        "out": torch.empty_like(x),
    }


def _f32(v: float) -> float:
    return float(torch.tensor(v, dtype=torch.float32))  # 0.999f etc. as the kernel has them


def trips_reference(inputs: dict) -> torch.Tensor:
    v, c = inputs["x"].double(), inputs["count"]
    steps = [(_f32(1 - k / 1000), _f32(k / 1000)) for k in _STEPS]
    for k in range(int(c.max()) + 1 if c.numel() else 0):
        w = v
        for a, b in steps:
            w = w * a + b
        v = torch.where(k < c, w, v)
    return v


ZOO_DIVERGENCE = KernelSpec(
    name="zoo_divergence",
    description="zoo: per-element loops of 0-255 steps: lanes diverge; sorted by count, they agree",
    variants=(
        Variant("divergent", _cuda_only, prepare=_trips(False), description="element i on lane i"),
        Variant("sorted", _cuda_only, prepare=_trips(True), description="lanes take sorted counts"),
    ),
    make_inputs=trips_inputs,
    reference=trips_reference,
    dtypes=("float32",),
    # 2^22 elements x 128 steps on average x 8 FMA: ~145 us if lanes agree; divergent warps run
    # their slowest lane's count (~250): about twice that
    shapes=((1 << 22,),),
    tolerances={"float32": (1e-5, 1e-5)},
    bytes_moved=lambda s, size: 2 * s[0] * size + 4 * s[0],  # x, y, counts (the order: twin's)
    flops=lambda s: 2 * len(_STEPS) * 128 * s[0],  # the average count's FMAs
    interpret_shapes=((1000,),),
)


# --- shared memory per block caps occupancy: a 48 KB staging buffer (4 blocks, 25%) and 8 KB ---

# each block stages CHUNK float4 (16 B) in shared memory, then writes them back reversed within
# 512-float4 groups (so both chunk sizes give one result); one load in flight per thread (unroll
# 1), so bytes in flight per SM scale with the resident warps: 128 threads a block, 48 KB + 1 KB
# reserved: 4 blocks = 16 warps (25% theoretical, shared memory the limiter); 8 KB: 16 blocks by
# the thread limit = 64 warps (100%)
_STAGE = r"""
extern "C" __global__ void zoo_stage_CHUNK(const float4* x, float4* y) {
    __shared__ float4 s[CHUNK];
    long long base = (long long)blockIdx.x * CHUNK;
#pragma unroll 1
    for (int i = threadIdx.x; i < CHUNK; i += blockDim.x) s[i] = x[base + i];
    __syncthreads();
#pragma unroll 1
    for (int i = threadIdx.x; i < CHUNK; i += blockDim.x) y[base + i] = s[i ^ 511];
}
"""
GROUP = 512  # float4 reversed together: 8 KB


def _stage(chunk: int):
    def prepare():
        kernel = _compiled(_STAGE.replace("CHUNK", str(chunk)), f"zoo_stage_{chunk}")

        def run(inputs: dict) -> torch.Tensor:
            x, y = inputs["x"], inputs["out"]
            kernel(grid=(x.numel() // (4 * chunk), 1, 1), block=(128, 1, 1), args=[x, y])
            return y

        return run

    return prepare


def stage_reference(inputs: dict) -> torch.Tensor:
    x = inputs["x"].double().view(-1, GROUP, 4)
    return x.flip(1).reshape(-1)


ZOO_SMEM_OCCUPANCY = KernelSpec(
    name="zoo_smem_occupancy",
    description="zoo: a copy staged through 48 KB of shared memory a block (25% theoretical), 8 KB",
    variants=(
        Variant("smem_48k", _cuda_only, prepare=_stage(3072), description="48 KB, 4 blocks/SM"),
        Variant("smem_8k", _cuda_only, prepare=_stage(512), description="8 KB, 16 blocks/SM"),
    ),
    make_inputs=lambda shape, dtype, device, gen: {
        "x": torch.randn(shape, generator=gen, device=device).to(getattr(torch, dtype)),
        "out": torch.empty(shape, device=device, dtype=getattr(torch, dtype)),
    },
    reference=stage_reference,
    dtypes=("float32",),
    # 3072 x 4 x 4096 fp32 (192 MB), a whole number of chunks for both: 384 MB moved, ~0.1 ms at
    # the copy roof; 16 warps an SM with one 16-byte load in flight each hold about a quarter of
    # the bytes in flight DRAM needs
    shapes=((3072 * 4 * 4096,),),
    tolerances={"float32": (0.0, 0.0)},
    bytes_moved=lambda s, size: 2 * s[0] * size,
    flops=lambda s: 0,
    interpret_shapes=((3072 * 4,),),
)


# --- barrier stalls: values rotated across a warp through shared memory, two barriers a step ---

# 256 threads; each step writes v to shared memory, waits at a barrier, reads its lane's right
# neighbour (within its 32-lane group), and waits again before the next write. The twin passes
# the same value with one warp shuffle: no shared memory, no barrier
_ROTATE = r"""
extern "C" __global__ void zoo_rotate_MODE(const float* x, float* y, int iters) {
    int t = threadIdx.x, j = blockIdx.x * 256 + t;
    float v = x[j];
#if !MODE
    __shared__ float s[256];
    int nb = (t & ~31) | ((t + 1) & 31);
#endif
    for (int k = 0; k < iters; ++k) {
#if MODE
        v = __shfl_sync(0xffffffffu, v, (t + 1) & 31) * 0.5f + 0.25f;
#else
        s[t] = v;
        __syncthreads();
        v = s[nb] * 0.5f + 0.25f;
        __syncthreads();
#endif
    }
    y[j] = v;
}
"""


def _rotate(shuffle: bool):
    def prepare():
        mode = int(shuffle)
        kernel = _compiled(_ROTATE.replace("MODE", str(mode)), f"zoo_rotate_{mode}")

        def run(inputs: dict) -> torch.Tensor:
            x, y = inputs["x"], inputs["out"]
            kernel(grid=(x.numel() // 256, 1, 1), block=(256, 1, 1), args=[x, y, inputs["iters"]])
            return y

        return run

    return prepare


def rotate_inputs(shape, dtype, device, gen) -> dict:
    n, iters = shape
    x = torch.randn(n, generator=gen, device=device).to(getattr(torch, dtype))
    return {"x": x, "iters": iters, "out": torch.empty_like(x)}


def rotate_reference(inputs: dict) -> torch.Tensor:
    v = inputs["x"].double().view(-1, 32)
    for _ in range(inputs["iters"]):
        v = torch.roll(v, -1, dims=1) * 0.5 + 0.25
    return v.reshape(-1)


ZOO_BARRIER = KernelSpec(
    name="zoo_barrier",
    description="zoo: a value rotated across each warp, through shared memory between two "
    "barriers a step, and by a warp shuffle",
    variants=(
        Variant("syncthreads", _cuda_only, prepare=_rotate(False), description="two barriers"),
        Variant("shuffle", _cuda_only, prepare=_rotate(True), description="__shfl_sync"),
    ),
    make_inputs=rotate_inputs,
    reference=rotate_reference,
    dtypes=("float32",),
    # 2^20 threads x 512 steps: each step a barrier pair that a 256-thread block waits at
    shapes=((1 << 20, 512),),
    tolerances={"float32": (1e-6, 1e-6)},
    bytes_moved=lambda s, size: 2 * s[0] * size,
    flops=lambda s: 2 * s[0] * s[1],
    interpret_shapes=((256, 3),),
)
