"""Fail fast before any capture (jobs/zoo_holdout.toml): import every spec of the new zoo kernels
and of the hold-out, and check each variant against its float64 reference on the GPU at its first
interpret shape (the CUDA kernels compiled by NVRTC, Liger imported). Exits 1 naming each failure.

    python3 holdout/preflight.py [SPEC ...]      # default: every one
"""

from __future__ import annotations

import sys
from pathlib import Path

from profkit.measure.case_timing import resolve_callable
from profkit.measure.correctness import check
from profkit.spec import load_module_specs

ROOT = Path(__file__).resolve().parents[1]
# (file, specs): the zoo's issue-30 kernels and the whole hold-out
SOURCES = {
    "zoo/launch.py": ("zoo_tiny_programs", "zoo_scatter"),
    "zoo/atomics.py": ("zoo_atomic_order",),
    "zoo/autocast.py": ("zoo_autocast",),
    "zoo/cuda.py": ("zoo_smem_occupancy", "zoo_barrier"),
    "zoo/tensor.py": ("zoo_gemm_spill", "zoo_gemm_fp32"),
    "holdout/specs.py": None,  # every spec
}


def main(only: list[str]) -> int:
    failed = []
    for path, names in SOURCES.items():
        specs = load_module_specs(ROOT / path, f"preflight_{Path(path).stem}")
        for spec in specs.values():
            if (names is not None and spec.name not in names) or (only and spec.name not in only):
                continue
            prepared: dict = {}
            for v in spec.variants:
                label = f"{spec.name}.{v.name}"
                try:
                    fn = resolve_callable(v, prepared)
                    shape = spec.interpret_shapes[0]
                    if spec.name == "ho_fp8":
                        shape = (64, 64, 64)  # cuBLAS fp8 wants dimensions in multiples of 16
                    r = check(spec, fn, shape, spec.dtypes[0], "cuda", seed=3)
                    ok, why = r.correct, r.error
                except Exception as exc:  # the first problem of each variant, one line
                    ok, why = False, f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
                print(f"{'ok  ' if ok else 'FAIL'} {label:36} {why}")
                if not ok:
                    failed.append(label)
    if failed:
        print(f"error: {len(failed)} variant(s) failed: {' '.join(failed)}")
        return 1
    print("preflight: every variant correct")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
