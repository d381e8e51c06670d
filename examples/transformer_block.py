"""A small pre-norm transformer block trained for a few steps: the workload `profkit profile`'s
example profiles (README, jobs/profile.toml).

    profkit profile --steps 5 --step-range step -- python examples/transformer_block.py

Attention (fused QKV projection, PyTorch's scaled_dot_product_attention, causal), RMSNorm written
out in eager ops (a chain of elementwise kernels and a reduction: the kind of code profiling
finds), and a SwiGLU MLP; bf16 weights and activations, forward, backward and an AdamW step. Each
step is an NVTX range named "step", with "attention", "mlp", "norm", "backward" and "optimizer"
inside it, so a profiler can leave out the warm-up steps and group kernels by range.
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F
from torch import nn


def marker(device: str):
    """A named range: NVTX on the GPU (what ncu and Nsight Systems see), record_function on the
    CPU, where NVTX is not built in."""
    if device == "cuda":
        return torch.cuda.nvtx.range
    return torch.profiler.record_function


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # unfused, as often written: float32 statistics, several elementwise kernels
        xf = x.float()
        scale = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return (xf * scale).to(x.dtype) * self.weight


class Block(nn.Module):
    def __init__(self, dim: int, heads: int, hidden: int, device: str) -> None:
        super().__init__()
        self.heads = heads
        self.range = marker(device)
        self.norm1, self.norm2 = RMSNorm(dim), RMSNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.proj = nn.Linear(dim, dim, bias=False)
        self.gate = nn.Linear(dim, hidden, bias=False)
        self.up = nn.Linear(dim, hidden, bias=False)
        self.down = nn.Linear(hidden, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        with self.range("norm"):
            h = self.norm1(x)
        with self.range("attention"):
            q, k, v = self.qkv(h).view(b, t, 3, self.heads, d // self.heads).unbind(2)
            q, k, v = (z.transpose(1, 2) for z in (q, k, v))
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        with self.range("norm"):
            h = self.norm2(x)
        with self.range("mlp"):
            x = x + self.down(F.silu(self.gate(h)) * self.up(h))
        return x


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--dim", type=int, default=1024)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--hidden", type=int, default=2816)  # about 8/3 of dim, a multiple of 256
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = p.parse_args()
    torch.manual_seed(0)
    device, dtype = args.device, torch.bfloat16
    block = Block(args.dim, args.heads, args.hidden, device).to(device=device, dtype=dtype)
    opt = torch.optim.AdamW(block.parameters(), lr=1e-4, foreach=True)
    x = torch.randn(args.batch, args.seq, args.dim, device=device, dtype=dtype)
    mark = marker(device)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    start = time.perf_counter()
    opens = []
    for _ in range(args.steps):
        opens.append(time.perf_counter())
        with mark("step"):
            y = block(x)
            loss = y.float().pow(2).mean()
            with mark("backward"):
                loss.backward()
            with mark("optimizer"):
                opt.step()
                opt.zero_grad(set_to_none=True)
            sync()  # a step ends when its kernels have run
    end = time.perf_counter()
    print(f"{args.steps} steps in {end - start:.3f} s, loss {loss.item():.4f}")
    last = min(3, args.steps)  # each step ends synchronized: the wall clock is the step's length
    print(f"last {last} steps: {1e3 * (end - opens[-last]) / last:.3f} ms per step")


if __name__ == "__main__":
    main()
