"""Probe (issue 11, session 5): the lab's flash-decoding attention (kernels/_decode_attention.py)
against the step's eager attention (kernels/decode.py attention()), then the dynamic walk with the
eager kernels against the fused ones.

    PYTHONPATH=/tmp/site:$PWD python3 bench/probe_attn5.py --out DIR        # H200, ~40-60 s
    PYTHONPATH=$PWD python3 bench/probe_attn5.py --out DIR --dry-run        # CPU, tiny dims

Part 1, per (batch, cache): q [batch, 32, 128] and a bf16 cache with ragged lengths (rng seed 0,
cache/2..cache, as bench/h200_decode.py's dynamic case) or all rows full ("full"). Every
implementation is checked against float64 (rows 0, the shortest and the last) on its own output
before timing; a wrong or failing one is a row with its error, never timed. Device time:
profkit.devicetime.measure (CUDA-graph replay, L2 flushed before each call). Implementations:
  eager   attention() over the whole capacity under a mask (the baseline);
  cur     decode_attention at launch_config (BLOCK_N 64, 4 warps, splits for 4 waves of 132 SMs);
  split16 the same at 16 waves (more splits: batch 1..24 only, where the split count changes);
  bn32    BLOCK_N 32, 4 warps (96 -> 64 registers offline: 8 programs per SM instead of 5).
need_mb: bytes the attention needs (valid slots' K and V, q, out); gbps = need / time (for eager
too: what it achieves on the needed bytes, though it reads the whole capacity); pct_copy = gbps
over a same-size device copy's (read + write) in this process.
Part 2: DynamicRunner over the run's walk (batch 8..32 every step, cache 2048, buckets
default_buckets(32), ragged lengths), eager kernels against fused (RMSNorm + this attention),
checked against float64 at batches 1, 8, 20, 32, then STEPS steps each in alternating halves:
p50, p95, p95/p50, within-bucket p95/p50, inherent bucket mix (profkit.steps).
Writes DIR/attn5.csv, DIR/attn5_dynamic.csv; prints the tables last.
A measured upper bound for a synthetic step, not an end-to-end serving claim.
"""

from __future__ import annotations

import argparse
import importlib
import os
import random
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

HEADS, DIM = 32, 128
BATCHES = (1, 8, 24, 32, 64)
CACHES = (512, 2048, 8192)
FULL = ((1, 2048), (32, 2048))  # all rows at the full length
WARMUP = 20


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--budget-s", type=float, default=60.0)
    p.add_argument("--steps", type=int, default=1000, help="dynamic steps per kernel choice")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dry-run", action="store_true", help="CPU interpreter, tiny dims, no timing")
    return p.parse_args(argv)


def cases(dry: bool) -> list[tuple[int, int, str]]:
    if dry:
        # 1x300: capacity 304, 2 splits at BLOCK_N 64, 5 at 32; 3x100: rows end mid-block
        return [(1, 300, "ragged"), (3, 40, "ragged"), (3, 100, "ragged"), (1, 40, "full")]
    # the run's cache (2048) and the full rows first: what the budget keeps if it runs short
    ragged = [(b, c, "ragged") for c in CACHES for b in BATCHES]
    first = [r for r in ragged if r[1] == 2048]
    full = [(b, c, "full") for b, c in FULL]
    return first + full + [r for r in ragged if r[1] != 2048]


def main(argv=None) -> int:
    a = parse_args(argv)
    if a.dry_run:
        os.environ["TRITON_INTERPRET"] = "1"
    import torch

    from profkit import steps
    from profkit.spec import find_spec

    find_spec("decode")  # registers kernels/ as profkit_lab
    dec = importlib.import_module("profkit_lab.decode")
    att = importlib.import_module("profkit_lab._decode_attention")
    sys.path.insert(0, str(Path(__file__).parent))
    from probe_decode4 import summarize

    device = "cpu" if a.dry_run else "cuda"
    if device == "cuda" and not torch.cuda.is_available():
        print("error: no CUDA GPU (use --dry-run on CPU)")
        return 2
    if not a.dry_run:
        from profkit import devicetime
        from profkit.timing import copy_gbps

        devicetime.TARGET_MS, devicetime.MAX_SAMPLES = 20.0, 100  # a probe: ~0.2 s per timing
    t0 = time.perf_counter()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    heads, dim = (4, 16) if a.dry_run else (HEADS, DIM)
    dtype = torch.bfloat16
    gen = torch.Generator(device=device).manual_seed(a.seed)
    rows_out: list[dict] = []
    copy_cache: dict[int, float] = {}

    def impls(batch: int, cap: int) -> list[tuple[str, object]]:
        out = [("eager", None), ("cur", att.launch_config(batch, heads, cap, dim))]
        many = att.launch_config(batch, heads, cap, dim, waves=16)
        if many != out[1][1]:
            out.append(("split16", many))
        out.append(("bn32", att.launch_config(batch, heads, cap, dim, block_n=32)))
        return out

    for batch, cache, kind in cases(a.dry_run):
        base = dict(batch=batch, cache=cache, lengths=kind)
        if time.perf_counter() - t0 > a.budget_s * 0.55:  # the dynamic part needs ~15 s
            rows_out.append({**base, "impl": "all", "error": "skipped (budget)"})
            continue
        try:
            cap = dec.capacity_for(cache)
            rng = random.Random(a.seed)
            lengths = [rng.randint(cache // 2, cache) if kind == "ragged" else cache
                       for _ in range(batch)]  # fmt: skip
            shape = (batch, heads, cap, dim)
            inp = {
                "k_cache": torch.randn(shape, generator=gen, device=device).to(dtype),
                "v_cache": torch.randn(shape, generator=gen, device=device).to(dtype),
                "pos": torch.tensor(lengths, dtype=torch.int64, device=device),
                "slots": torch.arange(cap, device=device),
            }
            q = torch.randn(batch, heads, dim, generator=gen, device=device).to(dtype)
            pick = sorted({0, int(np.argmin(lengths)), batch - 1})
            idx = torch.tensor(pick, device=device)
            ref = att.reference(q[idx], inp["k_cache"][idx], inp["v_cache"][idx], inp["pos"][idx])
        except Exception as exc:
            rows_out.append({**base, "impl": "all", "error": f"{type(exc).__name__}: {exc}"[:200]})
            continue
        valid = sum(n + 1 for n in lengths)
        need = (2 * valid * heads * dim + 2 * batch * heads * dim) * 2
        gbps_copy = copy_gbps(need, copy_cache) if not a.dry_run else float("nan")
        for name, cfg in impls(batch, cap):
            row = {**base, "impl": name, "config": str(cfg or ""), "need_mb": need / 1e6}
            fn = call(dec, att, name, cfg, inp, q)
            try:
                got = fn()[idx].double()
                err = (got - ref).abs().max().item()
                # bf16 output of O(0.1) averages: a few of its ulps, and finite
                tol = 2e-3 + 1.6e-2 * ref.abs().max().item()
                ok = bool(torch.isfinite(got).all()) and err <= tol
                row |= dict(correct=ok, max_abs_err=err, error="" if ok else "outside tolerance")
                if ok and not a.dry_run:
                    t = devicetime.measure(fn, rounds=2).summary()
                    us = t["device_p50_ms"] * 1e3
                    row |= dict(p50_us=us, gbps=need / us / 1e3, copy_gbps=gbps_copy)
                    row["pct_copy"] = 100 * row["gbps"] / gbps_copy
            except Exception as exc:  # compile failure, out of resources: a row, not an abort
                msg = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
                row |= dict(correct=False, error=msg)
            rows_out.append(row)
        del inp, q
        if device == "cuda":
            torch.cuda.empty_cache()
        print(f"[{time.perf_counter() - t0:5.1f}s] {kind} {batch}x{cache}", flush=True)
    table = pd.DataFrame(rows_out)
    table.to_csv(out / "attn5.csv", index=False)

    dyn = dynamic(a, dec, steps, summarize, torch, device, t0)
    pd.DataFrame(dyn).to_csv(out / "attn5_dynamic.csv", index=False)
    report(table, dyn, time.perf_counter() - t0)
    return 0


def call(dec, att, name: str, cfg, inp: dict, q):
    if name == "eager":
        return lambda: dec.attention(inp, q)
    return lambda: att.decode_attention(q, inp["k_cache"], inp["v_cache"], inp["pos"], cfg)


def dynamic(a, dec, steps, summarize, torch, device: str, t0: float) -> list[dict]:
    """The run's dynamic walk with eager kernels and with fused ones, checked, then timed."""
    dims = dec.Dims(64, 4, 96) if a.dry_run else dec.LAYER
    cache, lo, hi = (12, 2, 4) if a.dry_run else (2048, 8, 32)
    n_steps = 24 if a.dry_run else a.steps
    dtype, capture = "bfloat16", not a.dry_run
    tol = dec.SPEC.tolerances[dtype]
    gen = torch.Generator(device=device).manual_seed(a.seed)
    buckets = dec.default_buckets(hi)
    rows = max(buckets)
    rng = random.Random(a.seed)
    lengths = [rng.randint(cache // 2, cache) for _ in range(rows)]  # as bench/h200_decode.py
    inp = {
        **dec.make_weights(dims, dtype, device, gen),
        **dec.make_state(dims, rows, cache, dtype, device, gen, lengths),
    }
    x = torch.randn(rows, dims.hidden, generator=gen, device=device).to(torch.bfloat16)
    walk = dec.batch_walk(n_steps + WARMUP, lo, hi, seed=a.seed)
    ref_inp = {**inp, "x": x}
    results, runners = [], {}
    for kernels in ("eager", "fused"):
        res = {"kernels": kernels}
        results.append(res)
        try:
            runner = dec.DynamicRunner(inp, buckets, capture, kernels)
            for n in sorted({1, lo, (lo + hi) // 2, hi}):
                pick = sorted({0, n - 1})
                v = steps.check_step(
                    lambda n=n, runner=runner: runner(x[:n]),
                    lambda pick=pick: dec.reference(dec.select_rows(ref_inp, pick)),
                    pick,
                    tol,
                )
                if not v["correct"]:
                    raise AssertionError(f"batch {n}: {v['error']}")
            res["correct"] = True
            runners[kernels] = runner
        except Exception as exc:
            res |= {"correct": False, "error": f"{type(exc).__name__}: {exc}"[:200]}
    half = n_steps // 2
    dev = {k: [] for k in runners}
    order = list(runners)
    for j in range(2):  # halves alternate: E F F E, so a drift falls on both alike
        if time.perf_counter() - t0 > a.budget_s * 0.95:
            break
        for k in order if j == 0 else order[::-1]:
            r = runners[k]
            s = steps.run_steps(
                lambda i, r=r, j=j: r(x[: walk[j * half + i]]), half, WARMUP, device=device
            )
            dev[k].append(s.device_ms)
    for res in results:
        k = res["kernels"]
        if dev.get(k):
            d = np.concatenate(dev[k])
            res |= summarize(d, walk[: d.size], buckets)
    return [r | {"walk": f"{lo}..{hi}", "cache": cache} for r in results]


def report(table: pd.DataFrame, dyn: list[dict], elapsed: float) -> None:
    print(f"\nattn5 probe, {elapsed:.1f} s; us = device p50 (L2 flushed); "
          "GB/s and % of copy over the bytes needed (valid K+V, q, out)")  # fmt: skip
    head = f"{'lengths':7} {'batch':>5} {'cache':>5} {'need_MB':>8} {'eager':>7}"
    head += f" {'cur':>7} {'split16':>7} {'bn32':>7} {'cur_GB/s':>8} {'%copy':>6} {'x_eager':>7}"
    print(head)
    if "impl" not in table:
        return
    for (kind, batch, cache), g in table.groupby(["lengths", "batch", "cache"], sort=False):
        by = g.set_index("impl")

        def us(name, by=by):
            if name not in by.index:
                return "-"
            r = by.loc[name]
            if not r.get("correct", False):
                return "ERR" if str(r.get("error", "")).strip() else "-"
            v = r.get("p50_us", float("nan"))
            return f"{v:.1f}" if pd.notna(v) else "ok"

        cur = by.loc["cur"] if "cur" in by.index else {}
        need = cur.get("need_mb", float("nan")) if len(cur) else float("nan")
        gb = cur.get("gbps", float("nan")) if len(cur) else float("nan")
        pc = cur.get("pct_copy", float("nan")) if len(cur) else float("nan")
        try:
            x = by.loc["eager", "p50_us"] / by.loc["cur", "p50_us"]
        except (KeyError, TypeError):
            x = float("nan")
        print(f"{kind:7} {batch:5d} {cache:5d} {need:8.2f} {us('eager'):>7} {us('cur'):>7} "
              f"{us('split16'):>7} {us('bn32'):>7} {gb:8.0f} {pc:6.1f} {x:7.2f}")  # fmt: skip
    ok = table["correct"].fillna(False).astype(bool) if "correct" in table else False
    bad = table[~ok | table["impl"].eq("all")]
    for r in bad.itertuples():
        print(f"  {r.lengths} {r.batch}x{r.cache} {r.impl}: {getattr(r, 'error', '')}"[:100])
    d0 = dyn[0] if dyn else {}
    print(f"\ndynamic walk {d0.get('walk')}, cache {d0.get('cache')} "
          "(eager kernels vs fused RMSNorm + attention)")  # fmt: skip
    cols = ["kernels", "correct", "steps", "p50_us", "p95_us", "p95_over_p50", "within_bucket",
            "inherent_mix", "error"]  # fmt: skip
    print(pd.DataFrame(dyn).reindex(columns=cols).to_string(
        index=False, float_format=lambda v: f"{v:.3f}"))  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
