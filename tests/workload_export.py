"""A hand-made timing export (profkit.workload.trace's format) for the profile tests, small enough
to check by hand, until a stored run of the example replaces it.

Two steps of one program, each launching the nine kernels of the fx_rmsnorm fixture report in its
order (tests/fixtures: the fused Triton RMSNorm, then the unfused eager chain's eight launches),
each kernel lasting what ncu measured for it there, 5 us apart, then one memset. The fused kernel
runs in range "fused", the chain in "eager". Groups: 7 (the chain's two MulFunctor launches make
one group, and so do its two FillFunctor launches). One step: 251.296 us of kernels in a 300.296 us
GPU span (45 us of gaps).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from profkit.workload.trace import FORMAT, KERNEL_COLUMNS, OP_COLUMNS, RANGE_COLUMNS, VERSION

_VEC = "void at::native::vectorized_elementwise_kernel<4, at::native::{0}, std::array<char*, 3ul> >"
MUL = _VEC.format("MulFunctor<float>") + "(int, at::native::MulFunctor<float>)"
FILL = _VEC.format("FillFunctor<float>") + "(int, at::native::FillFunctor<float>)"
COPY = "void at::native::unrolled_elementwise_kernel<at::native::CopyFunctor>(int, CopyFunctor)"
MEAN = "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, MeanOps> >(ReduceOp)"
RSQRT = "void at::native::elementwise_kernel<128, 2, at::native::RsqrtFunctor>(int, RsqrtFunctor)"
CAST = "void at::native::elementwise_kernel<128, 2, at::native::CastFunctor>(int, CastFunctor)"
# (name, op, grid, block, duration us): fx_rmsnorm's launches 0..8, in order
KERNELS = [
    ("_rmsnorm_kernel", None, "4096x1x1", "256x1x1", 32.416),
    (COPY, "aten::copy_", "32768x1x1", "128x1x1", 46.56),
    (MUL, "aten::mul", "16384x1x1", "128x1x1", 30.528),
    (MEAN, "aten::mean", "256x1x1", "512x1x1", 23.936),
    (FILL, "aten::fill_", "4x1x1", "128x1x1", 2.432),
    (FILL, "aten::fill_", "4x1x1", "128x1x1", 2.176),
    (RSQRT, "aten::rsqrt", "65536x1x1", "128x1x1", 49.376),
    (MUL, "aten::mul", "16384x1x1", "128x1x1", 23.168),
    (CAST, "aten::to", "32768x1x1", "128x1x1", 40.704),
]
STEP_US = 1000.0
GAP_US = 5.0
MEMSET_US = 4.0


# fx_source's three launches (Triton kernels: wide_row twice, then hist), for the source pass
SOURCE_KERNELS = [
    ("wide_row", None, "2048x1x1", "32x1x1", 109.696),
    ("wide_row", None, "2048x1x1", "32x1x1", 108.576),
    ("hist", None, "16384x1x1", "128x1x1", 4234.624),
]


# the aten op calls holding a launch, outermost first, where they are not just its op (calls=True)
CHAINS = {"aten::to": ["aten::to", "aten::_to_copy", "aten::copy_"]}


def hand_export(
    exit_status: int = 0,
    steps: int = 2,
    order: list[int] | None = None,
    kernels=KERNELS,
    calls: bool = False,
) -> dict:
    """The export; `order` launches the kernels in another order (the same in every step). With
    calls, each launch is held by its op's aten calls (CHAINS; none for the Triton kernel), each a
    row of the export's "ops", so that the counter pass can gate on them."""
    rows, ranges, ops = [], [], []
    corr = 0
    step_us = max(STEP_US, sum(k[-1] for k in kernels) + 200.0)
    for s in range(steps):
        t0 = s * step_us
        ranges.append(["step", t0, t0 + 900.0, 1])
        ranges.append(["fused", t0 + 1.0, t0 + 3.0, 1])
        ranges.append(["eager", t0 + 3.0, t0 + 20.0, 1])
        start = t0 + 10.0
        for i in order or range(len(kernels)):
            name, op, grid, block, dur = kernels[i]
            corr += 1
            launch = t0 + 2.0 if i == 0 else t0 + 3.0 + i
            held = "step > fused" if i == 0 else "step > eager"
            dtype = "float16" if op else None
            held_by = []
            for depth, call in enumerate(CHAINS.get(op, [op]) if op else []):
                held_by.append(len(ops))
                ops.append([call, launch - 0.45 + 0.05 * depth, launch + 0.45 - 0.05 * depth, 1])
            rows.append(["kernel", name, start, dur, launch, corr, 7, grid, block, held, op, dtype])
            if calls:
                rows[-1].append(held_by)
            start += dur + GAP_US
        corr += 1
        rows.append(["memset", "Memset (Device)", start, MEMSET_US, t0 + 19.0, corr, 7, None,
                     None, "step > eager", None, None, *([[]] if calls else [])])  # fmt: skip
    columns = [c for c in KERNEL_COLUMNS if c != "grad_fn"]  # no backward here
    if (
        not calls
    ):  # as written before exports named each launch's op calls: the counter pass's window
        columns.remove("op_ids")
    return {
        "format": FORMAT,
        "version": VERSION,
        "program": ["tiny.py"],
        "exit_status": exit_status,
        "wall_s": 0.5,
        "cuda": True,
        "torch": "hand-made",
        "kernels": {"columns": columns, "rows": rows},
        "ranges": {"columns": list(RANGE_COLUMNS), "rows": ranges},
        **({"ops": {"columns": list(OP_COLUMNS), "rows": ops}} if calls else {}),
    }


def write_export(path: Path, **kwargs) -> Path:
    with gzip.open(path, "wt") as f:
        json.dump(hand_export(**kwargs), f)
    return path
