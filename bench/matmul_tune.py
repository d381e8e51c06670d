"""Time a few alternative matmul configurations per shape class on the GPU (bf16), beside cuBLAS.

    PYTHONPATH=. python3 bench/matmul_tune.py OUT.csv

The lab's launch_config picks one configuration per shape class from reasoning alone
(kernels/matmul.py); this says which of a handful of neighbours is faster, so the next version
can take it. Each configuration is checked against torch.matmul first (a wrong or unlaunchable
one is recorded, not timed). Timing: triton.testing.do_bench (median, L2 flushed). About two
minutes, mostly compilation. Prints the fastest per (variant, shape) and where the default ranks.
"""

from __future__ import annotations

import csv
import importlib
import sys

import torch
import triton

from profkit.spec import find_spec

find_spec("matmul")
LAB = importlib.import_module("profkit_lab.matmul")
C = LAB.Config
LARGE = [
    C(128, 256, 64, 8, 3, 8, 2),
    C(128, 256, 64, 8, 4, 8, 2),
    C(128, 128, 64, 8, 4, 4, 1),
    C(128, 128, 64, 8, 4, 8, 1),
    C(256, 128, 64, 8, 3, 8, 2),
    C(128, 128, 128, 8, 3, 8, 1),
]
DECODE = [
    C(16, 64, 128, 8, 4, 4, 1),
    C(16, 32, 128, 8, 4, 4, 1),
    C(16, 64, 256, 8, 3, 4, 1),
    C(16, 128, 128, 8, 4, 4, 1),
    C(64, 64, 64, 8, 4, 4, 1),
]
SHAPES = {(8192, 8192, 8192): LARGE, (4096, 14336, 4096): LARGE, (16, 8192, 8192): DECODE}
# M = 128: the decode tiles' N and K widths with BM = 128 (BK at most 64: shared memory)
SHAPES[(128, 8192, 8192)] = [C(128, c[1], min(c[2], 64), 8, 4, 4, 1) for c in DECODE[:4]]


def main(out_path: str) -> int:
    rows = []
    for (m, n, k), configs in SHAPES.items():
        gen = torch.Generator(device="cuda").manual_seed(0)
        inputs = LAB.make_inputs((m, n, k), "bfloat16", "cuda", gen)
        ref = torch.matmul(inputs["a"], inputs["b"])
        cublas_ms = triton.testing.do_bench(lambda: LAB.matmul_cublas(inputs))  # noqa: B023
        rows.append(dict(variant="cublas", shape=f"{m}x{n}x{k}", config="", ms=cublas_ms))
        for variant, fn in (("triton", LAB.matmul_tiled), ("persistent", LAB.matmul_persistent)):
            default = LAB.launch_config(m, n, k, variant == "persistent")
            for cfg in dict.fromkeys([default, *configs]):
                row = dict(variant=variant, shape=f"{m}x{n}x{k}", config=str(tuple(cfg)), ms=None)
                try:
                    inputs["out"].fill_(float("nan"))
                    fn(inputs, cfg)
                    torch.cuda.synchronize()
                    ok = torch.allclose(inputs["out"].float(), ref.float(), atol=2e-2, rtol=2e-2)
                    if ok:
                        row["ms"] = triton.testing.do_bench(lambda: fn(inputs, cfg))  # noqa: B023
                    else:
                        row["error"] = "wrong result"
                except Exception as exc:  # e.g. out of shared memory: record, go on
                    row["error"] = f"{type(exc).__name__}: {exc}"[:200]
                row["default"] = cfg == default
                rows.append(row)
                print(row, flush=True)
    with open(out_path, "w", newline="") as f:
        fields = ["variant", "shape", "config", "default", "ms", "error"]
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    print("\nfastest per (variant, shape), vs cuBLAS:")
    cublas = {r["shape"]: r["ms"] for r in rows if r["variant"] == "cublas"}
    for key in sorted({(r["variant"], r["shape"]) for r in rows if r["variant"] != "cublas"}):
        timed = sorted((r for r in rows if (r["variant"], r["shape"]) == key and r["ms"]),
                       key=lambda r: r["ms"])  # fmt: skip
        if not timed:
            print(f"  {key}: nothing ran")
            continue
        rank = next((i + 1 for i, r in enumerate(timed) if r.get("default")), None)
        best = timed[0]
        print(
            f"  {key[0]:<10} {key[1]:<16} best {best['config']} {best['ms'] * 1e3:8.1f} us "
            f"({cublas[key[1]] / best['ms']:.3f} of cuBLAS's speed); default ranks {rank}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "matmul-tune.csv"))
