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


# --- bank conflicts: a transpose through a 32x32 tile read by columns, and a 32x33 tile --------

_TRANSPOSE = r"""
extern "C" __global__ void zoo_transpose_COLS(const float* x, float* y, int n) {
    __shared__ float tile[32][COLS];
    int bx = blockIdx.x * 32, by = blockIdx.y * 32;
    for (int r = threadIdx.y; r < 32; r += blockDim.y)      // coalesced row-wise read into smem
        tile[r][threadIdx.x] = x[(long long)(by + r) * n + bx + threadIdx.x];
    __syncthreads();
    for (int r = threadIdx.y; r < 32; r += blockDim.y)      // column-wise out of smem: with 32
        y[(long long)(bx + r) * n + by + threadIdx.x] = tile[threadIdx.x][r];  // columns a warp's
}                                                           // 32 lanes share one bank; 33 spread
"""


def _transpose(cols: int):
    def prepare():
        name = f"zoo_transpose_{cols}"
        kernel = _compiled(_TRANSPOSE.replace("COLS", str(cols)), name)

        def run(inputs: dict) -> torch.Tensor:
            x, y = inputs["x"], inputs["out"]
            n = x.shape[0]
            kernel(grid=(n // 32, n // 32, 1), block=(32, 8, 1), args=[x, y, n])
            return y

        return run

    return prepare


def square_inputs(shape, dtype, device, gen) -> dict:
    (n,) = shape
    x = torch.randn((n, n), generator=gen, device=device).to(getattr(torch, dtype))
    return {"x": x, "out": torch.empty_like(x)}


ZOO_BANK = KernelSpec(
    name="zoo_bank",
    description="zoo: a shared-memory transpose, 32x32 tile (32-way conflicts) and 32x33",
    variants=(
        Variant("conflicted", _cuda_only, prepare=_transpose(32), description="32x32 tile"),
        Variant("padded", _cuda_only, prepare=_transpose(33), description="32x33 tile"),
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

_TRIPS = r"""
extern "C" __global__ void zoo_trips_ORDERED(const float* x, const int* count,
                                             const int* order, float* y, int n) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= n) return;
    int i = ORDERED ? order[j] : j;   // sorted: a warp's lanes get elements of equal count
    float v = x[i];
    int c = count[i];                 // 0..255 at random: a warp runs its slowest lane's count
    for (int k = 0; k < c; ++k) {     // with the others masked off
        v = v * 0.999f + 0.001f;
        v = v * 0.998f + 0.002f;
        v = v * 0.997f + 0.003f;
        v = v * 0.996f + 0.004f;
    }
    y[i] = v;
}
"""


def _trips(sorted_order: bool):
    def prepare():
        ordered = int(sorted_order)
        kernel = _compiled(_TRIPS.replace("ORDERED", str(ordered)), f"zoo_trips_{ordered}")

        def run(inputs: dict) -> torch.Tensor:
            x, y = inputs["x"], inputs["out"]
            n = x.numel()
            kernel(
                grid=((n + 255) // 256, 1, 1),
                block=(256, 1, 1),
                args=[x, inputs["count"], inputs["order"], y, n],
            )
            return y

        return run

    return prepare


def trips_inputs(shape, dtype, device, gen) -> dict:
    (n,) = shape
    x = torch.randn(n, generator=gen, device=device).to(getattr(torch, dtype))
    count = torch.randint(0, 256, (n,), generator=gen, device=device, dtype=torch.int32)
    order = torch.argsort(count, stable=True).to(torch.int32)  # outside the timed call
    return {"x": x, "count": count, "order": order, "out": torch.empty_like(x)}


def _f32(v: float) -> float:
    return float(torch.tensor(v, dtype=torch.float32))  # 0.999f etc. as the kernel has them


def trips_reference(inputs: dict) -> torch.Tensor:
    v, c = inputs["x"].double(), inputs["count"]
    steps = [(_f32(1 - k / 1000), _f32(k / 1000)) for k in (1, 2, 3, 4)]
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
    # 2^22 elements x 128 steps on average x 4 FMA: ~65 us if lanes agreed; divergent warps run
    # their slowest lane's count (~250): about twice that
    shapes=((1 << 22,),),
    tolerances={"float32": (1e-5, 1e-5)},
    bytes_moved=lambda s, size: 2 * s[0] * size + 4 * s[0],  # x, y, counts (the order: twin's)
    flops=lambda s: 2 * 4 * 128 * s[0],  # the average count's FMAs
    interpret_shapes=((1000,),),
)
