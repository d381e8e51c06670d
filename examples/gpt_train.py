"""A GPT-2-style language model trained for a few steps: the training step `profkit profile`'s
second example profiles (README, jobs/profile_gpt.toml). Nothing is downloaded: the weights are
random, the tokens too.

    profkit profile --steps 3 --step-range step -- python examples/gpt_train.py

GPT-2 small by default (12 layers, 12 heads, width 768, 50,257-token vocabulary, 1,024 positions:
124M parameters, the output head tied to the token embedding), batch 8 x 1024, fp32 weights under
bf16 autocast (so each step casts its weights to bf16), PyTorch's scaled_dot_product_attention
(causal), GELU MLPs, LayerNorm, cross-entropy over the vocabulary, fused AdamW. Each step is an NVTX
range named "step", with "forward", "loss", "backward" and "optimizer" inside it, so a profiler
can leave out the warm-up steps and group kernels by range. Flags shrink it (a CPU smoke test
runs it at a tiny size).
"""

from __future__ import annotations

import argparse
import math
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


class Block(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.fc = nn.Linear(dim, 4 * dim)
        self.out = nn.Linear(4 * dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads).unbind(2)
        q, k, v = (z.transpose(1, 2) for z in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, vocab: int, seq: int, dim: int, heads: int, layers: int) -> None:
        super().__init__()
        self.tokens = nn.Embedding(vocab, dim)
        self.positions = nn.Embedding(seq, dim)
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.tokens.weight  # tied, as GPT-2's
        for name, p in self.named_parameters():  # GPT-2's initialisation
            if p.dim() == 2:
                residual = name.endswith(("proj.weight", "out.weight"))
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * layers) if residual else 0.02)
            elif name.endswith("bias"):
                nn.init.zeros_(p)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.tokens(idx) + self.positions(pos)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--last", type=int, default=3, help="steps the printed step clock covers")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=1024)
    p.add_argument("--dim", type=int, default=768)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--vocab", type=int, default=50257)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = p.parse_args()
    torch.manual_seed(0)
    device = args.device
    model = GPT(args.vocab, args.seq, args.dim, args.heads, args.layers).to(device)
    fused = device == "cuda"  # the fused AdamW kernel is CUDA's; the CPU smoke test uses foreach
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, fused=fused, foreach=not fused)
    tokens = torch.randint(0, args.vocab, (args.batch, args.seq + 1), device=device)
    x, y = tokens[:, :-1], tokens[:, 1:]
    mark = marker(device)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    start = time.perf_counter()
    opens = []
    for _ in range(args.steps):
        opens.append(time.perf_counter())
        with mark("step"):
            with torch.autocast(device, dtype=torch.bfloat16):
                with mark("forward"):
                    logits = model(x)
                with mark("loss"):
                    loss = F.cross_entropy(logits.view(-1, logits.shape[-1]), y.reshape(-1))
            with mark("backward"):
                loss.backward()
            with mark("optimizer"):
                opt.step()
                opt.zero_grad(set_to_none=True)
            sync()  # a step ends when its kernels have run
    end = time.perf_counter()
    print(f"{args.steps} steps in {end - start:.3f} s, loss {loss.item():.4f}")
    last = min(args.last, args.steps)  # each step ends synchronized: the clock is its length
    print(f"last {last} steps: {1e3 * (end - opens[-last]) / last:.3f} ms per step")


if __name__ == "__main__":
    main()
