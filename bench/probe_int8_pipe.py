"""Which Tensor sub-pipe counters an int8 GEMM lights on the H200 (issue 20, part 3).

    PYTHONPATH=$PWD python3 bench/probe_int8_pipe.py --out DIR              (H200: runs ncu itself)
    TRITON_INTERPRET=1 PYTHONPATH=$PWD python3 bench/probe_int8_pipe.py --dry-run        (CPU)

explain.roofs.pipe_roof judges a kernel on IMMA against the int8 roof, reading the IMMA busy share
(tensor_imma_pct) or, without it, the instruction counts (imma_inst against hmma_inst + gmma_inst).
On sm_90 an int8 tl.dot may compile to warpgroup MMA (IGMMA): whether ncu counts that on the IMMA
cycles counter or on the GMMA instruction counter decides whether the rule sees it. Three GEMMs,
each checked exactly (int32) or against float64 first: a Triton int8 tl.dot (int32 accumulate),
torch._int_mm (cuBLASLt int8), and the same Triton kernel in fp16 (the HMMA reference). ncu then
profiles one launch of each (its NVTX range: int8_pipe.<name>) with the tensor sub-pipe metrics
and writes DIR/int8_pipe.csv (ncu --csv --page raw) and DIR/ncu.log. --dry-run: tiny shapes on
the CPU interpreter, checks only.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

METRICS = (
    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_tensor_op_imma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_tensor_op_dmma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__inst_executed_pipe_tensor_op_hmma.sum",
    "sm__inst_executed_pipe_tensor_op_imma.sum",
    "sm__inst_executed_pipe_tensor_op_gmma.sum",
    "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
    "gpu__time_duration.sum",
    "gpc__cycles_elapsed.avg.per_second",
)


@triton.jit
def _gemm(
    a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, INT: tl.constexpr
):
    pm, pn = tl.program_id(0), tl.program_id(1)
    rm, rn, rk = pm * BM + tl.arange(0, BM), pn * BN + tl.arange(0, BN), tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.int32 if INT else tl.float32)
    for k in range(0, K, BK):
        x = tl.load(a + rm[:, None] * K + (k + rk)[None, :])
        y = tl.load(b + (k + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(x, y, out_dtype=tl.int32 if INT else tl.float32)
    tl.store(c + rm[:, None] * N + rn[None, :], acc.to(c.dtype.element_ty))


def triton_gemm(a: torch.Tensor, b: torch.Tensor, block: int) -> torch.Tensor:
    (m, k), n = a.shape, b.shape[1]
    integer = a.dtype == torch.int8
    c = torch.empty(m, n, device=a.device, dtype=torch.int32 if integer else torch.float32)
    grid = (m // block, n // block)
    _gemm[grid](a, b, c, m, n, k, BM=block, BN=block, BK=min(64, k), INT=integer)
    return c


def cases(size: int, device: str, block: int) -> dict:
    g = torch.Generator(device=device).manual_seed(0)
    a8 = torch.randint(-128, 128, (size, size), generator=g, device=device, dtype=torch.int8)
    b8 = torch.randint(-128, 128, (size, size), generator=g, device=device, dtype=torch.int8)
    a16, b16 = (torch.randn(size, size, generator=g, device=device).half() for _ in "ab")
    out = {
        "triton_int8": (lambda: triton_gemm(a8, b8, block), a8, b8),
        "triton_fp16": (lambda: triton_gemm(a16, b16, block), a16, b16),
    }
    if device == "cuda":
        out["int_mm"] = (lambda: torch._int_mm(a8, b8), a8, b8)
    return out


def check(name: str, fn, a: torch.Tensor, b: torch.Tensor) -> None:
    got, ref = fn().double().cpu(), (a.double() @ b.double()).cpu()
    if a.dtype == torch.int8:
        bad = int((got != ref).sum())
        print(f"{name}: {'exact' if bad == 0 else f'{bad} elements differ'}", flush=True)
    else:
        err = float((got - ref).norm() / ref.norm())
        print(f"{name}: relative error {err:.2e}", flush=True)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--out", type=Path)
    p.add_argument("--dry-run", action="store_true")
    p.add_argument("--child", action="store_true", help="(ncu runs this) one launch per case")
    p.add_argument("--size", type=int, default=4096)
    a = p.parse_args()
    if a.dry_run:
        for name, (fn, x, y) in cases(64, "cpu", 32).items():
            check(name, fn, x, y)
        return 0
    runs = cases(a.size, "cuda", 128)
    if a.child:
        import nvtx

        for name, (fn, _, _) in runs.items():
            fn()  # compile outside the range
            torch.cuda.synchronize()
            with nvtx.annotate(f"int8_pipe.{name}", domain="profkit"):
                fn()
            torch.cuda.synchronize()
        return 0
    for name, (fn, x, y) in cases(512, "cuda", 128).items():
        check(name, fn, x, y)
    a.out.mkdir(parents=True, exist_ok=True)
    cmd = ["ncu", "--nvtx", "--nvtx-include", "regex:profkit@int8_pipe\\..+/", "--csv",
           "--page", "raw", "--print-nvtx-rename", "kernel", "--metrics", ",".join(METRICS),
           sys.executable, __file__, "--child", "--size", str(a.size)]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True)
    (a.out / "ncu.log").write_text(done.stderr)
    (a.out / "int8_pipe.csv").write_text(done.stdout)
    print(done.stdout[-4000:])
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
