"""Vector add: out = x + y, 1-D, the lab's pure streaming kernel.

The Triton kernel against torch.add(out=). Minimum traffic: read x and y once, write out once,
3 n itemsize bytes, and one FLOP per element: a copy-bandwidth test with a launch in front.
Streaming cache hints and five other add designs were measured and lost (kernels/NOTES.md,
"Designs removed from the tree").
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from profkit.spec import KernelSpec, Variant


@triton.jit
def _add_kernel(X, Y, OUT, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    # one 64-bit base per program, 32-bit offsets inside it (2^28 fp32 elements is 1 GiB: the
    # element index still fits in int32, but the byte offsets of larger inputs would not)
    base = pid.to(tl.int64) * BLOCK
    offs = tl.arange(0, BLOCK)
    mask = offs < n - base
    x = tl.load(X + base + offs, mask=mask)
    y = tl.load(Y + base + offs, mask=mask)
    # fp32 math for every dtype: the same single rounding as torch.add, and the interpreter's
    # bf16 arithmetic is broken (load -> fp32 -> store is what it runs correctly)
    out = (x.to(tl.float32) + y.to(tl.float32)).to(OUT.dtype.element_ty)
    tl.store(OUT + base + offs, out, mask=mask)


def launch_config(n: int, itemsize: int) -> tuple[int, int]:
    """(BLOCK, num_warps) for n elements: torch.add's own shape, 1024 elements per 128-thread
    program, at every size (v2, session 3).

    v1 held 16 KB of each operand per 8-warp program (more bytes in flight per thread, the
    prediction's lever) and ran 0.4-1.1% behind torch.add from 2^26 up (run ef4521). Side by side
    in bench/probe_memory.py (bench/results/h200-20261130-s3/memprobe/) torch's shape ran at
    1.000-1.003 of torch.add against v1's 1.004-1.011: many small programs stream as well as a few
    large ones, and retire without a tail. The small sizes keep a grid of their own (2^16: 64
    programs, as torch.add's).
    """
    return 1024, 4


def add_triton(inputs: dict, config: tuple[int, int] | None = None) -> torch.Tensor:
    x, y, out = inputs["x"], inputs["y"], inputs["out"]
    n = x.numel()
    block, num_warps = config or launch_config(n, x.element_size())
    _add_kernel[(triton.cdiv(n, block),)](x, y, out, n, BLOCK=block, num_warps=num_warps)
    return out


def add_torch(inputs: dict) -> torch.Tensor:
    return torch.add(inputs["x"], inputs["y"], out=inputs["out"])


def make_inputs(shape, dtype: str, device: str, generator: torch.Generator) -> dict:
    dt = getattr(torch, dtype)
    x = torch.randn(shape, generator=generator, device=device, dtype=torch.float32).to(dt)
    y = torch.randn(shape, generator=generator, device=device, dtype=torch.float32).to(dt)
    return {"x": x, "y": y, "out": torch.empty_like(x)}


def reference(inputs: dict) -> torch.Tensor:
    return inputs["x"].double() + inputs["y"].double()


def _numel(shape) -> int:
    # 1-D only: any other shape is an input error, reported by capture before any work
    if len(shape) != 1:
        raise ValueError("vector_add takes 1-D shapes N, e.g. 16777216")
    return shape[0]


SPEC = KernelSpec(
    name="vector_add",
    description="out = x + y, 1-D, against torch.add(out=)",
    variants=(
        Variant(
            "triton",
            add_triton,
            description="Triton, 1024 elements per 128-thread program (torch.add's shape)",
        ),
        Variant("torch", add_torch, baseline=True, description="torch.add(x, y, out=out)"),
    ),
    make_inputs=make_inputs,
    reference=reference,
    dtypes=("float32", "float16", "bfloat16"),
    # 2^16 (launch-bound: 0.8 MB in fp32), 2^20, 2^24, 2^26, 2^28 (3 GB in fp32, ~0.76 ms at
    # copy bandwidth), written out: `profkit list` reads these literals without importing torch
    shapes=((65536,), (1048576,), (16777216,), (67108864,), (268435456,)),
    # one rounding of the exact sum to the output type: half an ulp (fp32 2^-24, fp16 2^-11,
    # bf16 2^-8 relative); the interpreter truncates fp32 -> bf16, a whole bf16 ulp (2^-7)
    tolerances={"float32": (1e-6, 1e-6), "float16": (1e-5, 1e-3), "bfloat16": (1e-5, 1e-2)},
    bytes_moved=lambda shape, itemsize: 3 * _numel(shape) * itemsize,
    flops=lambda shape: _numel(shape),
    interpret_shapes=((1000,), (4096,), (5000,)),
)
