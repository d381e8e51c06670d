"""The hold-out's bare report (issue 30, item 6): torch.matmul in fp32 at 4096^3 with PyTorch's
defaults (TF32 off), profiled as a user would: no spec, no NVTX, one GEMM between the CUDA
profiler's start and stop, under

    ncu --profile-from-start off --metrics <profkit's> -o raw_sgemm python3 holdout/raw_sgemm.py

(holdout/capture.sh). It checks the product against float64 first and exits 1 if it is wrong.
"""

from __future__ import annotations

import sys

import torch

assert not torch.backends.cuda.matmul.allow_tf32, "TF32 must be off: PyTorch's default"
gen = torch.Generator(device="cuda").manual_seed(0)
a = torch.randn(4096, 4096, device="cuda", generator=gen)
b = torch.randn(4096, 4096, device="cuda", generator=gen)
c = a @ b  # warm-up: cuBLAS loads its kernels outside the profiled window
err = float((c.double() - a.double() @ b.double()).abs().max())
if err > 1e-2:
    sys.exit(f"error: fp32 GEMM off by {err:.3g}")
torch.cuda.synchronize()
torch.cuda.profiler.start()
a @ b
torch.cuda.synchronize()
torch.cuda.profiler.stop()
print(f"ok: fp32 4096^3 GEMM, max abs err {err:.2g}")
