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
