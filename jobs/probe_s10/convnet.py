"""Probe workload (session 10): a small conv net trained a few steps, eager or compiled, to read
explain on kernels it was not written for (cuDNN convolutions, batch norm, pooling, Inductor)."""
import argparse
import time

import torch
from torch import nn


def block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout),
                         nn.ReLU(inplace=True))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--compile", action="store_true")
    a = p.parse_args()
    torch.manual_seed(0)
    net = nn.Sequential(block(3, 64), block(64, 64), nn.MaxPool2d(2), block(64, 128),
                        block(128, 128), nn.MaxPool2d(2), block(128, 256), block(256, 256),
                        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(256, 100))
    net = net.cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    model = torch.compile(net) if a.compile else net
    x = torch.randn(a.batch, 3, 64, 64, device="cuda").to(memory_format=torch.channels_last)
    y = torch.randint(0, 100, (a.batch,), device="cuda")
    t0 = time.perf_counter()
    opens = []
    for _ in range(a.steps):
        opens.append(time.perf_counter())
        with torch.cuda.nvtx.range("step"):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            torch.cuda.synchronize()
    end = time.perf_counter()
    print(f"{a.steps} steps in {end - t0:.3f} s, loss {loss.item():.4f}")
    print(f"last 3 steps: {1e3 * (end - opens[-3]) / 3:.3f} ms per step")


if __name__ == "__main__":
    main()
