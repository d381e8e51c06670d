"""Repeatability of each sum variant on the H200: 20 runs on one 2^28 fp32 input; how many distinct
results, their spread and the worst error against float64 (atomics reorder the additions).

    python3 bench/sum_determinism.py
"""

from __future__ import annotations

import torch

from profkit.spec import find_spec

spec = find_spec("sum")
gen = torch.Generator(device="cuda").manual_seed(0)
inputs = spec.make_inputs((1 << 28,), "float32", "cuda", gen)
ref = float(spec.reference(inputs))
for variant in spec.variants:
    vals = [float(variant.fn(inputs)) for _ in range(20)]
    spread = (max(vals) - min(vals)) / abs(ref)
    err = max(abs(v - ref) for v in vals) / abs(ref)
    print(
        f"{variant.name:<15} 20 runs: {len(set(vals))} distinct, spread {spread:.2e} rel, "
        f"worst rel err {err:.2e}"
    )
