"""Softmax vs Liger on the H200: launch shape and cache hints, device time (graph, L2 flushed)."""
import json, os, sys, time
import torch, triton, triton.language as tl
from profkit import devicetime
from kernels import softmax as lab
from liger_kernel.ops.softmax import LigerSoftmaxFunction
from liger_kernel.ops.utils import calculate_settings


@triton.jit
def rows_k(X, Y, n_rows, n_cols, sx, sy, BLOCK_N: tl.constexpr, ROWS: tl.constexpr,
           LH: tl.constexpr, SH: tl.constexpr, UP: tl.constexpr):
    pid = tl.program_id(0)
    first = pid * ROWS
    xb = X + first.to(tl.int64) * sx
    yb = Y + first.to(tl.int64) * sy
    rows = tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK_N)
    mask = ((first + rows) < n_rows)[:, None] & (cols < n_cols)[None, :]
    p = xb + rows[:, None] * sx + cols[None, :]
    if LH == 1:
        x = tl.load(p, mask=mask, other=-float("inf"), eviction_policy="evict_first")
    elif LH == 2:
        x = tl.load(p, mask=mask, other=-float("inf"), cache_modifier=".ca")
    else:
        x = tl.load(p, mask=mask, other=-float("inf"))
    if UP:
        x = x.to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=1)[:, None])
    y = e / tl.sum(e, axis=1)[:, None]
    q = yb + rows[:, None] * sy + cols[None, :]
    if SH == 1:
        tl.store(q, y.to(Y.dtype.element_ty), mask=mask, cache_modifier=".cs")
    elif SH == 2:
        tl.store(q, y.to(Y.dtype.element_ty), mask=mask, eviction_policy="evict_first")
    else:
        tl.store(q, y.to(Y.dtype.element_ty), mask=mask)


def rows_call(x, y, block, rows, warps, lh, sh, up=1):
    n_rows, n_cols = x.shape
    rows_k[(triton.cdiv(n_rows, rows),)](x, y, n_rows, n_cols, x.stride(0), y.stride(0),
        BLOCK_N=block, ROWS=rows, LH=lh, SH=sh, UP=up, num_warps=warps)


HINTS = {"lab": (1, 0), "none": (0, 0), "liger": (2, 1), "ef_cs": (1, 1), "ef_ef": (1, 2)}
SHAPES = [(4096, 1024), (4096, 4096), (4096, 16384), (16384, 8192), (1024, 32768), (256, 65536)]
DT = [torch.float16, torch.bfloat16, torch.float32]
rows_out = []
copy_cache = {}
for dt in DT:
    for shape in SHAPES:
        x = (2 * torch.randn(shape, device="cuda")).to(dt)
        y = torch.empty_like(x)
        ref = torch.softmax(x.double(), -1)
        n = x.numel() * x.element_size()
        if n not in copy_cache:
            copy_cache[n] = devicetime.measure_copy(n)["device_p50_ms"]
        cfg = lab.launch_config(*shape, x.element_size())
        lb, lw = calculate_settings(shape[1])
        cands = {"lab": lambda: lab.softmax_triton({"x": x, "out": y}),
                 "liger": lambda: LigerSoftmaxFunction.apply(x)}
        if shape[1] <= 16384:
            for hn, (lh, sh) in HINTS.items():
                cands[f"labshape.{hn}"] = (lambda lh=lh, sh=sh: rows_call(x, y, cfg.block_n, cfg.rows, cfg.warps, lh, sh))
                cands[f"ligershape.{hn}"] = (lambda lh=lh, sh=sh: rows_call(x, y, lb, 1, lw, lh, sh))
            cands["ligershape.liger.noup"] = lambda: rows_call(x, y, lb, 1, lw, 2, 1, 0)
            for w in (4, 8, 16, 32):
                if w != lw:
                    cands[f"rows1.w{w}.liger"] = (lambda w=w: rows_call(x, y, lb, 1, w, 2, 1))
        for name, fn in cands.items():
            try:
                out = fn()
                torch.cuda.synchronize()
                got = out if name == "liger" else y
                err = (got.double() - ref).abs().max().item()
                t = devicetime.measure(fn).summary()["device_p50_ms"]
            except Exception as e:
                print("FAIL", dt, shape, name, type(e).__name__, str(e)[:100], flush=True)
                continue
            r = dict(dtype=str(dt).split(".")[1], shape=f"{shape[0]}x{shape[1]}", impl=name,
                     p50_us=round(t * 1e3, 2), pct_copy=round(100 * copy_cache[n] / t, 1),
                     max_err=float(f"{err:.2e}"))
            rows_out.append(r)
            print(r, flush=True)
out = os.environ.get("PROBE_OUT", os.environ.get("OUT", "."))
with open(f"{out}/softmax_probe.json", "w") as f:
    json.dump(rows_out, f)
import pandas as pd
df = pd.DataFrame(rows_out)
df.to_csv(f"{out}/softmax_probe.csv", index=False)
best = df.loc[df.groupby(["dtype", "shape"]).p50_us.idxmin()]
piv = df[df.impl.isin(["lab", "liger"])].pivot_table(index=["dtype", "shape"], columns="impl", values="p50_us")
piv = piv.join(best.set_index(["dtype", "shape"])[["impl", "p50_us", "pct_copy"]])
print(piv.to_string())
