"""Probe (issue 11): dynamic replay's copy_in, device input (as the stored runs) against a host
input copied from pageable memory and through a pinned buffer (non_blocking), at the run's walk
(batch 8..32, cache 2048, buckets 1, 2, 4, 8, 16, 24, 32). One set of graphs serves every mode
(the mode is a runner attribute); modes alternate in blocks over the same seeded walk. Each mode
is checked against the float64 reference (batches 1, 8, 20, 32, poisoned output) before timing.

    PYTHONPATH=/tmp/site:$PWD python3 bench/probe_decode4.py --out DIR      # H200, ~30-45 s
    PYTHONPATH=$PWD python3 bench/probe_decode4.py --out /tmp/p --dry-run   # CPU, tiny layer

Writes DIR/decode4.csv (one row per mode) and DIR/decode4_samples.csv.gz; prints a table last.
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

MODES = ("device", "pageable", "pinned")
WARMUP = 20


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--steps", type=int, default=1200, help="timed steps per mode (>= 1000)")
    p.add_argument("--blocks", type=int, default=4, help="alternating blocks per mode")
    p.add_argument("--probe-steps", type=int, default=1000, help="probed steps per mode")
    p.add_argument("--cache", type=int, default=2048)
    p.add_argument("--walk", default="8,32")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--budget-s", type=float, default=55.0)
    p.add_argument("--dry-run", action="store_true", help="CPU, tiny layer, host clock")
    a = p.parse_args(argv)
    a.lo, a.hi = (int(v) for v in a.walk.split(","))
    if not a.dry_run and a.steps < 1000:
        p.error("--steps must be >= 1000")
    if a.steps % a.blocks:
        p.error("--steps must be a multiple of --blocks")
    return a


def summarize(device_ms, batches, buckets) -> dict:
    """p50/p95/p99, p95/p50, within-bucket p95/p50 and inherent mix p95/p50 (profkit.steps)."""
    from profkit import steps

    x = np.asarray(device_ms, float)
    lab = steps.bucket_of(batches, buckets)
    p = steps.percentiles(x)
    med = {b: np.median(x[lab == b]) for b in set(lab.tolist())}
    rel = x / np.array([med[b] for b in lab.tolist()])
    return {
        "steps": p["n"],
        "p50_us": p["p50"] * 1e3,
        "p95_us": p["p95"] * 1e3,
        "p99_us": p["p99"] * 1e3,
        "p95_over_p50": p["p95"] / p["p50"],
        "within_bucket": steps.tail_ratio(rel),
        "inherent_mix": steps.inherent_mix(x, lab),
    }


def main(argv=None) -> int:
    a = parse_args(argv)
    if a.dry_run:
        os.environ["TRITON_INTERPRET"] = "1"
    import torch

    from profkit import steps
    from profkit.spec import lab_specs

    spec = lab_specs()["decode"]
    dec = importlib.import_module("profkit_lab.decode")
    device = "cpu" if a.dry_run else "cuda"
    if device == "cuda" and not torch.cuda.is_available():
        print("error: no CUDA GPU (use --dry-run on CPU)")
        return 2
    t0 = time.perf_counter()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    dims = dec.Dims(64, 4, 96) if a.dry_run else dec.LAYER
    cache = 12 if a.dry_run else a.cache
    dtype, capture = "bfloat16", not a.dry_run
    tol = spec.tolerances[dtype]
    gen = torch.Generator(device=device).manual_seed(a.seed)
    buckets = dec.default_buckets(a.hi)
    rows = max(buckets)
    rng = random.Random(a.seed)
    lengths = [rng.randint(cache // 2, cache) for _ in range(rows)]  # as bench/h200_decode.py
    inp = {
        **dec.make_weights(dims, dtype, device, gen),
        **dec.make_state(dims, rows, cache, dtype, device, gen, lengths),
    }
    x_dev = torch.randn(rows, dims.hidden, generator=gen, device=device).to(torch.bfloat16)
    sources = {"device": x_dev, "pageable": x_dev.cpu(), "pinned": x_dev.cpu()}
    walk = dec.batch_walk(a.steps + WARMUP, a.lo, a.hi, seed=a.seed)  # a block's warmup reads ahead
    ref_inp = {**inp, "x": x_dev}
    results, samples = {}, []
    runners = {}
    try:
        runners["plain"] = dec.DynamicRunner(inp, buckets, capture)
        probes = steps.Probes(("copy_in", *dec.STAGES), external=True, device=device)
        runners["probed"] = dec.DynamicRunner(inp, buckets, capture, mark=probes.mark)
    except Exception as exc:
        print(f"error: capture failed: {type(exc).__name__}: {exc}"[:300])
        return 1
    ok = {}
    for mode in MODES:
        try:
            runner = runners["plain"]
            runner.copy_in = mode if mode != "device" else "pinned"
            src = sources[mode]
            verdict = {"correct": True, "error": ""}
            for n in (1, a.lo, (a.lo + a.hi) // 2, a.hi):
                pick = sorted({0, n - 1})
                verdict = steps.check_step(
                    lambda n=n, src=src, runner=runner: runner(src[:n]),
                    lambda pick=pick: dec.reference(dec.select_rows(ref_inp, pick)),
                    pick,
                    tol,
                )
                if not verdict["correct"]:
                    verdict["error"] = f"batch {n}: {verdict['error']}"
                    break
        except Exception as exc:
            verdict = {"correct": False, "error": f"{type(exc).__name__}: {exc}"[:300]}
        ok[mode] = verdict
        results[mode] = {"mode": mode, "correct": verdict["correct"], "error": verdict["error"]}
        print(f"check {mode}: {'ok' if verdict['correct'] else verdict['error']}", flush=True)

    def call_for(kind: str, mode: str, offset: int):
        runner, src = runners[kind], sources[mode]
        runner.copy_in = mode if mode != "device" else "pinned"
        return lambda i: runner(src[: walk[offset + i]])

    good = [m for m in MODES if ok[m]["correct"]]
    block = a.steps // a.blocks
    dev = {m: [] for m in good}
    host = {m: [] for m in good}
    seen = {m: [] for m in good}  # each timed step's batch
    for j in range(a.blocks):  # alternate: drifts (clocks, host noise) fall on every mode alike
        for mode in good if j % 2 == 0 else good[::-1]:
            try:
                s = steps.run_steps(
                    call_for("plain", mode, j * block), block, WARMUP, device=device
                )
                seen[mode] += walk[j * block : (j + 1) * block]
                dev[mode].append(s.device_ms)
                host[mode].append(s.host_ms)
            except Exception as exc:
                results[mode]["error"] = f"{type(exc).__name__}: {exc}"[:300]
        if time.perf_counter() - t0 > a.budget_s * 0.6:
            print(f"budget: stopped after {j + 1} blocks", flush=True)
            break
    probe_steps = min(a.probe_steps, a.steps)
    for mode in good:
        if not dev[mode]:
            continue
        d, h = np.concatenate(dev[mode]), np.concatenate(host[mode])
        results[mode].update(summarize(d, seen[mode], buckets))
        results[mode]["host_p50_us"] = float(np.median(h)) * 1e3
        samples.append(pd.DataFrame({"mode": mode, "kind": "device", "ms": d}))
        if time.perf_counter() - t0 > a.budget_s * 0.85:
            results[mode]["probe_note"] = "skipped: budget"
            continue
        try:
            s = steps.run_steps(call_for("probed", mode, 0), probe_steps, WARMUP, probes, device)
            split = steps.tail_split(
                s.device_ms, s.probes, steps.bucket_of(walk[:probe_steps], buckets)
            )
            top = split[0]["excess_ms"]
            results[mode]["copy_in_p50_us"] = float(np.median(s.probes["copy_in"])) * 1e3
            results[mode]["tail_copy_in_us"] = top["copy_in"] * 1e3
            results[mode]["tail_launch_us"] = top["launch"] * 1e3
            results[mode]["probe_note"] = "; ".join(
                f"{k} {v * 1e3:+.1f}us" for k, v in list(top.items())[:3]
            )
            for k, v in s.probes.items():
                samples.append(pd.DataFrame({"mode": mode, "kind": "probe." + k, "ms": v}))
        except Exception as exc:
            results[mode]["probe_note"] = f"probes failed: {type(exc).__name__}: {exc}"[:200]
    table = pd.DataFrame(results.values())
    table.to_csv(out / "decode4.csv", index=False)
    if samples:
        pd.concat(samples, ignore_index=True).to_csv(out / "decode4_samples.csv.gz", index=False)
    cols = ["mode", "correct", "steps", "p50_us", "p95_us", "p99_us", "p95_over_p50",
            "within_bucket", "inherent_mix", "host_p50_us", "copy_in_p50_us",
            "tail_copy_in_us", "tail_launch_us"]  # fmt: skip
    shown = table.reindex(columns=cols).rename(
        columns={
            "p95_over_p50": "p95/p50",
            "within_bucket": "within",
            "inherent_mix": "mix",
            "host_p50_us": "host_us",
            "copy_in_p50_us": "copyin_us",
            "tail_copy_in_us": "tail_cpy",
            "tail_launch_us": "tail_lnch",
        }  # fmt: skip
    )
    print(f"\ndecode4 probe: walk {a.lo}..{a.hi}, cache {cache}, buckets {buckets}, "
          f"{time.perf_counter() - t0:.1f} s")  # fmt: skip
    print(shown.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    for r in results.values():
        if r.get("probe_note") or r.get("error"):
            print(f"  {r['mode']}: {r.get('probe_note', '')} {r.get('error', '')}".rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
