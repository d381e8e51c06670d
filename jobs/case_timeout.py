"""A GPU check of `capture --case-timeout` (issue 22): one variant that hangs (sleeps 20 s in
Python), one that runs. Run on the H200:

    profkit capture hang_check --from jobs/case_timeout.py --case-timeout 5 --no-counters \
        --out $OUT/runs; echo rc=$?

Expected: rc=3 (some cases incorrect), the `sleepy` cases reported "timed out after 5 s" and
skipped, the `copy` cases timed (device p50 in `profkit show`), in well under 20 s per hung case.
"""

import time

import torch

from profkit.spec import KernelSpec, Variant


def make_inputs(shape, dtype, device, generator):
    x = torch.randn(shape, generator=generator, device=device).to(getattr(torch, dtype))
    return {"x": x}


def sleepy(inputs):
    time.sleep(20)
    return inputs["x"].clone()


HANG_CHECK = KernelSpec(
    name="hang_check",
    description="a variant that hangs beside one that runs",
    variants=(
        Variant("sleepy", sleepy),
        Variant("copy", lambda i: i["x"].clone(), baseline=True),
    ),
    make_inputs=make_inputs,
    reference=lambda i: i["x"].double(),
    dtypes=("float32",),
    shapes=((4096, 4096), (1024, 8192)),
    tolerances={"float32": (0.0, 0.0)},
    bytes_moved=lambda s, e: 2 * s[0] * s[1] * e,
    flops=lambda s: 0,
)
