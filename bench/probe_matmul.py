"""Session-3 matmul probe: decode split-K candidates, large shapes re-timed interleaved with clocks,
and the FP8 kernel against torch._scaled_mm. Every candidate is checked against the float64
reference on fresh random inputs first; a wrong or failing one is recorded, never timed.

    PYTHONPATH=/tmp/site:$PWD python3 bench/probe_matmul.py --out DIR      # H200, ~150-200 s
    TRITON_INTERPRET=1 PYTHONPATH=$PWD python3 bench/probe_matmul.py --out DIR --dry-run  # CPU

(a) M = 16 and 128 (N = K = 8192), bf16 and fp16: tiled candidates (BN, BK, stages, split-K)
    beside cuBLAS and the persistent kernel.
(b) fp16 and bf16 at 8192^3 and 4096^3: persistent and cuBLAS interleaved over ROUNDS rounds
    (their order alternates), the NVML SM clock and throttle reasons logged with every timing.
(c) FP8 e4m3 at 8192^3 and 4096^3: the persistent kernel (default + candidates) vs
    torch._scaled_mm (fast accumulation, Triton's own on sm_90; and exact).
Device time is profkit's (CUDA-graph replay, L2 flushed before each call, median of many).
Writes DIR/probe_matmul.csv; prints a short table last. The budget is checked before each case:
past it, the remaining cases are recorded as skipped.
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

SPEC, SPEC_FP8 = find_spec("matmul"), find_spec("matmul_fp8")
LAB = importlib.import_module("profkit_lab.matmul")
C = LAB.Config
ROUNDS = 3
TC_FLOP_PER_CLK_SM = {"bfloat16": 4096, "float16": 4096, "float8_e4m3fn": 8192}  # dense wgmma

# (a) tiled candidates, predicted order in the notes (kernels/NOTES.md, matmul, session 3)
DECODE = {
    16: [
        C(16, 64, 128, 8, 4, 4),  # run cac0's config: 128 programs
        C(16, 32, 128, 8, 4, 4),  # BN 32: 256 programs, A (256 KB) re-read from L2 is cheap
        C(16, 64, 128, 8, 4, 4, 1, 2),  # split-K 2: 256 programs
        C(16, 128, 128, 8, 4, 4, 1, 4),  # split-K 4: 256 programs, half the A re-reads
        C(16, 64, 256, 8, 3, 4, 1, 2),  # wider K steps: fewer, larger loads in flight
    ],
    128: [
        C(128, 64, 64, 8, 4, 4),  # run cac0's config: 128 programs, 60% DRAM
        C(128, 32, 128, 8, 3, 4),  # BN 32: 256 programs, but 4x A's L2 re-reads (512 MB)
        C(128, 64, 64, 8, 4, 4, 1, 2),  # split-K 2: 256 programs, 8 MB partials
        C(128, 128, 64, 8, 3, 8, 1, 4),  # the new default: 256 programs, 2 per SM, 16 MB partials
        C(128, 128, 64, 8, 4, 8, 1, 4),  # the same in 4 stages: 1 per SM (128 KB), two waves
        C(128, 128, 64, 8, 3, 8, 1, 2),  # split-K 2: 128 programs, half the partials
        C(128, 256, 64, 8, 3, 8, 1, 8),  # 256 programs, A re-read 32x only, 32 MB partials
    ],
}
FP8_CANDIDATES = [
    C(128, 256, 128, 8, 4, 8, 2),  # 4 stages: 4 x 48 + 32 = 224 KB of 227
    C(128, 128, 128, 8, 4, 8, 1),  # smaller tile, more tiles per wave
]


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--budget-s", type=float, default=190.0)
    p.add_argument("--dry-run", action="store_true", help="CPU interpreter, tiny shapes, no timing")
    return p.parse_args()


class Probe:
    def __init__(self, args: argparse.Namespace) -> None:
        self.dry = args.dry_run
        self.device = "cpu" if self.dry else "cuda"
        self.deadline = time.monotonic() + args.budget_s
        self.rows: list[dict] = []
        self.checked: dict = {}  # (spec, impl, config, dtype, shape) -> Check

    def case(self, section, spec, dtype, shape, impl, fn, config="", rnd=0, baseline=None):
        """Check once per (impl, config, dtype, shape), then time; one CSV row."""
        row = dict(section=section, round=rnd, dtype=dtype, shape=format_shape(shape), impl=impl)
        row.update(config=str(tuple(config)) if config else "", baseline=baseline or "")
        self.rows.append(row)
        if time.monotonic() > self.deadline:
            row["error"] = "skipped: over the wall-time budget"
            return row
        t0 = time.monotonic()
        key = (spec.name, impl, row["config"], dtype, shape)
        try:
            if key not in self.checked:
                self.checked[key] = check(spec, fn, shape, dtype, self.device, seed=11)
            ok = self.checked[key]
            row.update(correct=ok.correct, rel_err=ok.rel_err, error=ok.error)
            if ok.correct and not self.dry:
                row.update(self.time(spec, fn, shape, dtype))
        except Exception as exc:  # compile failure, out of resources: a row, not an abort
            row.update(correct=False, error=f"{type(exc).__name__}: {exc}".splitlines()[0][:200])
        row["wall_s"] = round(time.monotonic() - t0, 2)
        print({k: row.get(k) for k in ("section", "dtype", "shape", "impl", "config", "us",
                                        "sm_clock_mhz", "error")}, flush=True)  # fmt: skip
        return row

    def time(self, spec, fn, shape, dtype) -> dict:
        from profkit import devicetime

        gen = torch.Generator(device=self.device).manual_seed(12)
        inputs = spec.make_inputs(shape, dtype, self.device, gen)
        s = devicetime.measure(lambda: fn(inputs)).summary()
        us = s["device_p50_ms"] * 1e3
        tflops = spec.flops(shape) / us / 1e6
        nbytes = spec.bytes_moved(shape, 1 if dtype.startswith("float8") else 2)
        clk = s.get("sm_clock_mhz")
        peak = 132 * TC_FLOP_PER_CLK_SM[dtype] * clk * 1e6 / 1e12 if clk else None
        return dict(
            us=round(us, 2),
            iqr_us=round(s["device_iqr_ms"] * 1e3, 2),
            reps=s["device_reps"],
            tflops=round(tflops, 1),
            gbps=round(nbytes / us / 1e3, 1),
            # achieved FLOPs over the dense Tensor Core peak at the logged SM clock: a lower
            # bound on the tensor pipe's busy share (ncu's figure needs a capture)
            tc_pct_at_clock=round(100 * tflops / peak, 1) if peak else None,
            sm_clock_mhz=clk,
            mem_clock_mhz=s.get("mem_clock_mhz"),
            clock_note=s.get("clock_note", ""),
            method=s["device_method"],
        )


def section_a(p: Probe) -> None:
    n = 256 if p.dry else 8192
    for dtype in ("bfloat16", "float16"):
        for m, configs in DECODE.items():
            shape = (m, n, n)
            p.case("a", SPEC, dtype, shape, "cublas", LAB.matmul_cublas)
            for cfg in configs:
                fn = lambda i, cfg=cfg: LAB.matmul_tiled(i, cfg)  # noqa: E731
                p.case("a", SPEC, dtype, shape, "triton", fn, cfg, baseline="cublas")
            cfg = LAB.launch_config(*shape, persistent=True)
            fn = lambda i, cfg=cfg: LAB.matmul_persistent(i, cfg)  # noqa: E731
            p.case("a", SPEC, dtype, shape, "persistent", fn, cfg, baseline="cublas")


def section_b(p: Probe) -> None:
    shapes = [(64, 64, 64)] if p.dry else [(8192, 8192, 8192), (4096, 4096, 4096)]
    impls = [("persistent", LAB.matmul_persistent), ("cublas", LAB.matmul_cublas)]
    for rnd in range(1, (1 if p.dry else ROUNDS) + 1):
        for dtype in ("float16", "bfloat16"):
            for shape in shapes:
                for impl, fn in impls if rnd % 2 else impls[::-1]:  # alternate who goes first
                    cfg = LAB.launch_config(*shape, persistent=True) if impl != "cublas" else ""
                    base = "cublas" if impl != "cublas" else None
                    p.case("b", SPEC, dtype, shape, impl, fn, cfg, rnd, baseline=base)


def section_c(p: Probe) -> None:
    shapes = [(64, 64, 64)] if p.dry else [(8192, 8192, 8192), (4096, 4096, 4096)]
    dt = "float8_e4m3fn"
    for shape in shapes:
        p.case("c", SPEC_FP8, dt, shape, "scaled_mm", LAB.matmul_fp8_scaled_mm)
        p.case("c", SPEC_FP8, dt, shape, "scaled_mm_exact", LAB.matmul_fp8_scaled_mm_exact)
        for cfg in [LAB.launch_config_fp8(*shape), *FP8_CANDIDATES]:
            fn = lambda i, cfg=cfg: LAB.matmul_fp8_persistent(i, cfg)  # noqa: E731
            p.case("c", SPEC_FP8, dt, shape, "persistent", fn, cfg, baseline="scaled_mm")


FIELDS = [
    "section", "round", "dtype", "shape", "impl", "config", "baseline", "correct", "rel_err",
    "us", "iqr_us", "reps", "tflops", "gbps", "tc_pct_at_clock", "vs_baseline", "sm_clock_mhz",
    "mem_clock_mhz", "clock_note", "method", "wall_s", "error",
]  # fmt: skip


def add_ratios(rows: list[dict]) -> None:
    """vs_baseline = baseline us / our us (> 1: faster), same section, round, dtype and shape."""
    base = {
        (r["section"], r["round"], r["dtype"], r["shape"], r["impl"]): r.get("us") for r in rows
    }
    for r in rows:
        b = base.get((r["section"], r["round"], r["dtype"], r["shape"], r["baseline"]))
        if b and r.get("us"):
            r["vs_baseline"] = round(b / r["us"], 3)


def table(rows: list[dict]) -> list[str]:
    short = {"bfloat16": "bf16", "float16": "fp16", "float8_e4m3fn": "fp8"}
    out = [f"{'sec':<3} {'rd':>2} {'dt':<4} {'shape':<14} {'impl':<14} {'config':<23} "
           f"{'us':>8} {'vs':>6} {'tc%':>5} {'MHz':>5} note"]  # fmt: skip
    for r in rows:
        if r["section"] == "a" and r["impl"] == "triton":
            continue  # the best tiled candidate per case follows instead
        out.append(line(r, short))
    for (_dt, shape), group in _groups([r for r in rows if r["section"] == "a"]).items():
        timed = [r for r in group if r["impl"] == "triton" and r.get("us")]
        if timed:
            best = min(timed, key=lambda r: r["us"])
            out.append(line({**best, "impl": "triton best"}, short))
        default = str(tuple(LAB.launch_config(*map(int, shape.split("x")))))
        for r in group:
            if r["impl"] == "triton" and r["config"] == default:
                out.append(line({**r, "impl": "triton default"}, short))
    bad = [r for r in rows if r.get("error")]
    out.append(f"{len(rows)} rows, {len(bad)} not timed (wrong, failed or skipped: see the CSV)")
    return out


def _groups(rows):
    groups: dict = {}
    for r in rows:
        groups.setdefault((r["dtype"], r["shape"]), []).append(r)
    return groups


def line(r: dict, short: dict) -> str:
    cfg = r["config"].replace(" ", "")
    us = f"{r['us']:8.1f}" if r.get("us") else f"{'-':>8}"
    note = r.get("clock_note") or r.get("error") or ""
    note = note.replace("sw_power_cap", "pwrcap").replace("sm clock ", "")
    return (
        f"{r['section']:<3} {r['round']:>2} {short[r['dtype']]:<4} {r['shape']:<14} "
        f"{r['impl']:<14} {cfg[1:-1][:23]:<23} {us} {_f(r.get('vs_baseline'), 6, 3)} "
        f"{_f(r.get('tc_pct_at_clock'), 5, 1)} {_f(r.get('sm_clock_mhz'), 5, 0)} {note}"
    )[:100]


def _f(v, width: int, digits: int) -> str:
    return f"{v:{width}.{digits}f}" if isinstance(v, (int, float)) else f"{'-':>{width}}"


def main() -> int:
    args = parse()
    if args.dry_run and os.environ.get("TRITON_INTERPRET") != "1":
        sys.exit("--dry-run runs the kernels in Triton's interpreter: set TRITON_INTERPRET=1")
    args.out.mkdir(parents=True, exist_ok=True)
    p = Probe(args)
    t0 = time.monotonic()
    for section in (section_a, section_b, section_c):
        section(p)
    add_ratios(p.rows)
    path = args.out / "probe_matmul.csv"
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(p.rows)
    print(f"\nwrote {path} in {time.monotonic() - t0:.0f} s")
    print("\n".join(table(p.rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
