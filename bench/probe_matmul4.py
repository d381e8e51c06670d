"""Session-4 matmul probe (issue 10's two misses): decode M = 128 (and M = 16) at N = K = 8192,
and 4096^3, bf16 and fp16: a few configurations per shape class against cuBLAS in one process.
Every candidate is checked against the float64 reference on fresh random inputs first; a wrong or
failing one is recorded as a row, never timed.

    PYTHONPATH=/tmp/site:$PWD python3 bench/probe_matmul4.py --out DIR       # H200, ~60-100 s
    TRITON_INTERPRET=1 PYTHONPATH=$PWD python3 bench/probe_matmul4.py --out DIR --dry-run  # CPU

Fairness under the power cap: per (dtype, shape) the candidates and cuBLAS are timed in ROUNDS
rounds, cuBLAS first in odd rounds and last in even ones, so each candidate's samples and
cuBLAS's come from the same minutes; every timing logs its NVML SM clock and throttle note.
pct_cublas = cuBLAS median / ours (> 100: faster), over all rounds' samples pooled, with the 95%
bootstrap CI of profkit.stats.compare_samples. Device time is profkit's (CUDA-graph replay, L2
flushed before each call). Order: M = 128, 4096^3, M = 16 (the budget cuts the last first).
Writes DIR/probe_matmul4.csv (one row per timing round) and prints a summary table last.
"""

from __future__ import annotations

import argparse
import csv
import importlib
import os
import sys
import time
from pathlib import Path

import torch

from profkit.spec import find_spec, format_shape
from profkit.timing import check

SPEC = find_spec("matmul")
LAB = importlib.import_module("profkit_lab.matmul")
C = LAB.Config
ROUNDS = 2
GRAPHS = 2  # graphs per timing (devicetime rounds): the interleaved rounds add the rest
TC_FLOP_PER_CLK_SM = 4096  # dense bf16/fp16 wgmma per SM per clock

# (kernel, config) per shape class; the first row of each is the shipped default.
# Shared memory per program: stages * (BM*BK + BK*BN) * 2 B, plus BM*BN/SUBTILE*2 B of epilogue
# staging for the persistent kernel; 227 KB is the per-block maximum (offline numbers in NOTES.md).
CANDIDATES = {
    "m128": [
        ("triton", LAB.DECODE[128]),  # 128x128x64 s3 w8 split4: 43.3 us in session 3's probe
        ("triton", C(128, 64, 64, 8, 8, 4)),  # cuBLAS's shape: 8 stages of B, 192 KB, grid 128
        ("triton", C(128, 64, 64, 8, 6, 4)),  # 144 KB: is 6 deep enough?
        ("triton", C(128, 64, 64, 8, 8, 8)),  # two warpgroups of 64x64 wgmma
        ("triton", C(128, 64, 128, 8, 4, 4)),  # same bytes in flight (192 KB) in half the steps
        ("triton", C(64, 64, 64, 8, 6, 4)),  # grid 256, 96 KB: 2 per SM, B read twice (L2)
        ("triton", C(128, 64, 64, 8, 4, 4)),  # run cac0's 4 stages: the depth control
        ("persistent", C(128, 64, 64, 8, 8, 4)),  # TMA, 8 stages: 192 + 16 KB epilogue
    ],
    "4096": [
        ("persistent", LAB.PERSISTENT_LARGE["short"]),  # 128x256x64 s3 w8 sub2: 96.5% of cuBLAS
        ("persistent", C(128, 256, 64, 8, 4, 8, 2)),  # 4 stages: 224 KB
        ("persistent", C(256, 128, 64, 8, 3, 8, 2)),  # cuBLAS's 256x128 tile
        ("persistent", C(256, 128, 64, 8, 4, 8, 2)),  # ... in 4 stages, as cuBLAS's 64x4
        ("persistent", C(128, 256, 64, 4, 3, 8, 2)),  # GROUP_M 4
        ("persistent", C(128, 256, 64, 16, 3, 8, 2)),  # GROUP_M 16
        ("persistent", C(128, 256, 128, 8, 2, 8, 2)),  # BK 128: half the K steps, 2 stages
        ("persistent", C(128, 128, 64, 8, 5, 4, 1)),  # 1024 tiles, one warpgroup, 5 stages
    ],
    "m16": [
        ("triton", LAB.DECODE[16]),  # 16x64x128 s4 w4: 34.2-34.8 us, 97.6% of cuBLAS in bf16
        ("triton", C(16, 64, 128, 8, 6, 4)),  # deeper: 6 x 20 KB
        ("triton", C(16, 64, 128, 8, 8, 4)),  # 8 x 20 KB = 160 KB
        ("triton", C(16, 64, 256, 8, 4, 4)),  # 4 x 40 KB: longer loads, half the steps
    ],
}
SHAPES = {"m128": (128, 8192, 8192), "4096": (4096, 4096, 4096), "m16": (16, 8192, 8192)}
DRY_SHAPES = {"m128": (128, 256, 256), "4096": (256, 256, 128), "m16": (16, 256, 256)}
FNS = {"triton": LAB.matmul_tiled, "persistent": LAB.matmul_persistent}


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--budget-s", type=float, default=120.0)
    p.add_argument("--dry-run", action="store_true", help="CPU interpreter, tiny shapes, no timing")
    p.add_argument("--only", choices=list(CANDIDATES), action="append", help="shape classes")
    return p.parse_args()


def label(impl: str, cfg) -> str:
    if cfg is None:
        return impl
    bm, bn, bk, g, s, w, sub, split = cfg[:8]
    extra = (f" g{g}" if g != 8 else "") + (f" sub{sub}" if sub > 1 else "")
    extra += f" split{split}" if split > 1 else ""
    extra += " last" if split > 1 and cfg.reduce == "last" else ""  # in-kernel reduction
    extra += " tma" if impl == "triton" and cfg.tma else ""
    extra += " rot" if impl == "triton" and cfg.rot else ""
    extra += f" x{cfg.per_sm}/SM" if cfg.per_sm > 1 else ""
    return f"{impl} {bm}x{bn}x{bk} s{s} w{w}{extra}"


class Probe:
    def __init__(self, args: argparse.Namespace) -> None:
        self.dry = args.dry_run
        self.device = "cpu" if self.dry else "cuda"
        self.deadline = time.monotonic() + args.budget_s
        self.rows: list[dict] = []
        self.samples: dict = {}  # (dtype, shape, label) -> every round's samples (ms)
        self.copy: dict = {}  # bytes -> copy GB/s

    def over(self) -> bool:
        return time.monotonic() > self.deadline

    def verify(self, fn, shape, dtype) -> dict:
        try:
            ok = check(SPEC, fn, shape, dtype, self.device, seed=11)
            return dict(correct=ok.correct, rel_err=ok.rel_err, error=ok.error)
        except Exception as exc:  # compile failure, out of resources: a row, not an abort
            return dict(correct=False, error=f"{type(exc).__name__}: {exc}".splitlines()[0][:200])

    def time(self, fn, shape, dtype) -> dict:
        gen = torch.Generator(device=self.device).manual_seed(12)
        inputs = SPEC.make_inputs(shape, dtype, self.device, gen)
        if self.dry:  # wall-clock samples on the CPU: only to run the rounds and the summary
            samples = []
            for _ in range(3):
                t0 = time.perf_counter()
                fn(inputs)
                samples.append((time.perf_counter() - t0) * 1e3)
            s = dict(device_p50_ms=sorted(samples)[1], device_iqr_ms=0.0, device_reps=3)
            s["device_method"] = "cpu wall clock (dry run)"
        else:
            from profkit import devicetime

            dt = devicetime.measure(lambda: fn(inputs), rounds=GRAPHS)
            samples, s = dt.samples_ms, dt.summary()
        us = s["device_p50_ms"] * 1e3
        tflops = SPEC.flops(shape) / us / 1e6
        gbps = SPEC.bytes_moved(shape, 2) / us / 1e3
        clk = s.get("sm_clock_mhz")
        peak = 132 * TC_FLOP_PER_CLK_SM * clk * 1e6 / 1e12 if clk else None
        return dict(
            samples=samples,
            us=round(us, 2),
            iqr_us=round(s["device_iqr_ms"] * 1e3, 2),
            reps=s["device_reps"],
            tflops=round(tflops, 1),
            gbps=round(gbps, 1),
            pct_copy=None if self.dry else round(100 * gbps / self.copy_gbps(shape), 1),
            # achieved FLOPs over the dense Tensor Core peak at the logged SM clock
            tc_pct_at_clock=round(100 * tflops / peak, 1) if peak else None,
            sm_clock_mhz=clk,
            clock_note=s.get("clock_note", ""),
            method=s["device_method"],
        )

    def copy_gbps(self, shape) -> float:
        """A device copy moving the case's bytes (read + written): the bandwidth ceiling."""
        from profkit.timing import copy_gbps

        return copy_gbps(SPEC.bytes_moved(shape, 2), self.copy)

    def shape_class(self, cls: str) -> None:
        self.run_class(cls, (DRY_SHAPES if self.dry else SHAPES)[cls], CANDIDATES[cls])

    def run_class(self, cls: str, shape, candidates) -> None:
        """Check every (impl, config) of `candidates` at `shape`, then time the correct ones
        beside cuBLAS in ROUNDS interleaved rounds (both dtypes)."""
        cands = [("cublas", None)] + list(candidates)
        for dtype in ("bfloat16", "float16"):
            good = []
            for impl, cfg in cands:
                name = label(impl, cfg)
                fn = LAB.matmul_cublas if cfg is None else lambda i, f=FNS[impl], c=cfg: f(i, c)
                row = dict(cls=cls, dtype=dtype, shape=format_shape(shape), impl=name, round=0)
                row["config"] = str(tuple(cfg)) if cfg else ""
                if self.over():
                    row["error"] = "skipped: over the wall-time budget"
                else:
                    t0 = time.monotonic()
                    row.update(self.verify(fn, shape, dtype))  # compiles too
                    row["wall_s"] = round(time.monotonic() - t0, 2)
                    if row["correct"]:
                        good.append((name, fn))
                self.rows.append(row)
                print({k: row.get(k) for k in ("dtype", "impl", "correct", "wall_s", "error")})
            for rnd in range(1, ROUNDS + 1):
                for name, fn in good if rnd % 2 else good[::-1]:  # cuBLAS first, then last
                    row = dict(cls=cls, dtype=dtype, shape=format_shape(shape), impl=name)
                    row["round"] = rnd
                    if self.over():
                        row["error"] = "skipped: over the wall-time budget"
                    else:
                        try:
                            row.update(self.time(fn, shape, dtype))
                            key = (dtype, row["shape"], name)
                            self.samples.setdefault(key, []).extend(row.pop("samples"))
                        except Exception as exc:
                            row["error"] = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
                    self.rows.append(row)
                    print({k: row.get(k) for k in ("dtype", "impl", "round", "us", "sm_clock_mhz")})


def summary(p: Probe) -> list[dict]:
    """One row per (dtype, shape, impl): pooled median over rounds, % of cuBLAS with its CI."""
    import numpy as np

    from profkit import stats

    out = []
    for (dtype, shape, name), xs in p.samples.items():
        base = p.samples.get((dtype, shape, "cublas"))
        timed = [r for r in p.rows if r.get("us") and (r["dtype"], r["shape"], r["impl"]) == (
            dtype, shape, name)]  # fmt: skip
        row = dict(dtype=dtype, shape=shape, impl=name, us=round(float(np.median(xs)) * 1e3, 2))
        copy = [r["pct_copy"] for r in timed if r.get("pct_copy")]
        row["pct_copy"] = round(float(np.mean(copy)), 1) if copy else None
        row["mhz"] = "/".join(f"{r.get('sm_clock_mhz') or 0:.0f}" for r in timed)
        row["capped"] = sum(bool(r.get("clock_note")) for r in timed)
        if base and name != "cublas":
            c = stats.compare_samples(base, xs)  # cuBLAS / ours: > 1 = ours faster
            row.update(pct_cublas=round(100 * c.ratio, 1), ci_low=round(100 * c.ci_low, 1))
            row.update(ci_high=round(100 * c.ci_high, 1), outcome=c.outcome)
        out.append(row)
    return out


FIELDS = [
    "cls", "dtype", "shape", "impl", "config", "round", "correct", "rel_err", "us", "iqr_us",
    "reps", "tflops", "gbps", "pct_copy", "tc_pct_at_clock", "sm_clock_mhz", "clock_note",
    "method", "wall_s", "error",
]  # fmt: skip
SUMMARY_FIELDS = [
    "dtype", "shape", "impl", "us", "pct_cublas", "ci_low", "ci_high", "outcome", "pct_copy",
    "mhz", "capped",
]  # fmt: skip


def table(rows: list[dict], summ: list[dict]) -> list[str]:
    short = {"bfloat16": "bf16", "float16": "fp16"}
    out = [f"{'dt':<4} {'shape':<14} {'impl':<40} {'us':>7} {'%cuBLAS [95% CI]':>20} "
           f"{'%copy':>5} cap"]  # fmt: skip
    for r in summ:
        pct = (
            f"{r['pct_cublas']:.1f} [{r['ci_low']:.1f},{r['ci_high']:.1f}]"
            if "pct_cublas" in r
            else "-"
        )
        out.append(
            f"{short[r['dtype']]:<4} {r['shape']:<14} {r['impl'][:40]:<40} {r['us']:7.1f} "
            f"{pct:>20} {_f(r['pct_copy'])} {r['capped']}"
        )
    bad = [r for r in rows if r.get("error")]
    for r in bad[:8]:
        out.append(f"  not timed: {short[r['dtype']]} {r['shape']} {r['impl']}: {r['error']}"[:100])
    out.append(f"{len(rows)} rows, {len(bad)} with an error (wrong, failed or skipped: see CSV)")
    return out


def _f(v) -> str:
    return f"{v:5.1f}" if isinstance(v, (int, float)) else f"{'-':>5}"


def main() -> int:
    args = parse()
    if args.dry_run and os.environ.get("TRITON_INTERPRET") != "1":
        sys.exit("--dry-run runs the kernels in Triton's interpreter: set TRITON_INTERPRET=1")
    args.out.mkdir(parents=True, exist_ok=True)
    p = Probe(args)
    t0 = time.monotonic()
    for cls in args.only or list(CANDIDATES):
        p.shape_class(cls)
    summ = summary(p)
    for name, fields, rows in (
        ("probe_matmul4.csv", FIELDS, p.rows),
        ("probe_matmul4_summary.csv", SUMMARY_FIELDS, summ),
    ):
        with (args.out / name).open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
            writer.writeheader()
            writer.writerows(rows)
    print(f"\nwrote {args.out}/probe_matmul4*.csv in {time.monotonic() - t0:.0f} s")
    print("\n".join(table(p.rows, summ)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
