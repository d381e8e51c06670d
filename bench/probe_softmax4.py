"""Probe the single-read split-row softmax ("rowsplit") at the long-row shapes, and 16-bit rows
16384 at 16 warps with NARROW at 4096x16384, beside the shipped config, torch.softmax,
torch.compile and a same-size device copy (issue 10, session 4).

    PYTHONPATH=/tmp/site:$PWD python3 bench/probe_softmax4.py --out DIR [--budget 90]
    PYTHONPATH=$PWD python3 bench/probe_softmax4.py --out DIR --dry-run   # CPU interpreter
    PYTHONPATH=$PWD python3 bench/probe_softmax4.py --out DIR --sm90      # offline registers

Every implementation is checked against the float64 reference on fresh inputs first; a wrong or
crashing one is recorded (correct=False, error) and never timed. Device time: CUDA-graph replay
with the L2 flushed before each call (profkit.devicetime), fewer samples than a capture. Pass 1
per case: the copy, the shipped config (`cur`), the candidates, torch.softmax; pass 2:
torch.compile (its compiles are the slowest part and earlier sessions measured it). Once
--budget seconds have passed, what is left is recorded as skipped.
--dry-run: 3 rows of each length through Triton's interpreter, checks only; there rowsplit runs
as two launches (its MODE 1 + 2: the same statistics and normalization, no program waiting on
another), so the one-launch spin-wait (MODE 0) is exercised only on the GPU.
--sm90: compile every candidate for sm_90 offline and print registers and spills (no GPU).

Writes DIR/probe_softmax4.csv (one row per case x implementation; p50_us device time, pct_copy
the bandwidth over a same-size copy's, vs_cur / vs_compile the time over the shipped config's /
torch.compile's) and prints two tables last: microseconds, and % of copy.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
from pathlib import Path

CASES = [
    (d, s) for s in ((256, 65536), (1024, 32768)) for d in ("float16", "bfloat16", "float32")
] + [(d, (4096, 16384)) for d in ("float16", "bfloat16")]
# rowsplit: (chunk elements per program, warps); 16 values per thread in each (32 registers
# offline in 16-bit); splits per row = cols / chunk
# PROBE_ROWSPLIT="4096x4,8192x8" replaces them (session 5: 32 values per thread in 16-bit, the
# bytes in flight per thread of fp32's 16, which reached 90% of copy where 16-bit reached 74%)
ROWSPLIT = tuple(
    tuple(int(v) for v in c.split("x"))
    for c in os.environ.get("PROBE_ROWSPLIT", "8192x16,16384x32,4096x8").split(",")
)
COLUMNS = ["cur", *(f"rs{c}w{w}" for c, w in ROWSPLIT), "r1w16narrow"]


def candidates(shape, itemsize: int) -> list[tuple[str, tuple]]:
    """(name, softmax_triton config) beyond the shipped launch_config."""
    rows, cols = shape
    out = []
    for chunk, warps in ROWSPLIT:
        splits = 1 << (-(-cols // chunk) - 1).bit_length()
        if splits >= 2 and (cols > 16384 or chunk == 8192):  # 16384 columns: 2 x 8192 only
            out.append((f"rs{chunk}w{warps}", ("rowsplit", chunk, splits, warps)))
    if cols == 16384 and itemsize == 2:  # NOTES.md session 3, next step (1)
        out.append(("r1w16narrow", ("rows", 16384, 1, 16, True)))
    return out


def sm90(lab) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from sm90_compile import PTR, REGS_PER_SM, compile_sm90, usage

    print(f"{'dtype':9} {'shape':11} {'candidate':12} regs spill blocks/SM")
    for dtype, shape in CASES:
        isz = 2 if dtype != "float32" else 4
        for name, cfg in candidates(shape, isz):
            if cfg[0] == "rowsplit":
                args = {"X": PTR[dtype], "Y": PTR[dtype], "STATS": "*fp32", "COUNT": "*i32"}
                args |= {"n_cols": "i32", "stride_x": "i32", "stride_y": "i32"}
                const = {"BLOCK": cfg[1], "S": cfg[2], "MODE": 0, "MAX_SPINS": 1 << 16}
                fn = lab._softmax_rowsplit_kernel
            else:
                args = {"X": PTR[dtype], "Y": PTR[dtype], "n_rows": "i32", "n_cols": "i32"}
                args |= {"stride_x": "i32", "stride_y": "i32"}
                const = {"BLOCK_N": cfg[1], "ROWS": cfg[2], "NARROW": cfg[4]}
                fn = lab._softmax_rows_kernel
            regs, spill = usage(compile_sm90(fn, args, const, cfg[3]))
            # registers are allocated per thread in multiples of 8 (per warp, 256)
            per_sm = min(32, REGS_PER_SM // (-(-regs // 8) * 8 * 32 * cfg[3]))
            print(f"{dtype:9} {'x'.join(map(str, shape)):11} {name:12} {regs:4} {spill:5} {per_sm}")


def summarize(df, spec, copy_cache: dict):
    import pandas as pd

    from profkit.spec import DTYPE_ITEMSIZE

    for col in ("p50_us", "iqr_us", "rel_err", "method"):
        if col not in df:
            df[col] = None
        if col != "method":
            df[col] = pd.to_numeric(df[col], errors="coerce")
    nbytes = df.apply(
        lambda r: spec.bytes_moved(
            tuple(map(int, r["shape"].split("x"))), DTYPE_ITEMSIZE[r["dtype"]]
        ),
        axis=1,
    )
    df["gbps"] = nbytes / df.p50_us / 1e3
    df["copy_gbps"] = [copy_cache.get(int(n), float("nan")) for n in nbytes]
    df["copy_us"] = nbytes / df.copy_gbps / 1e3
    df["pct_copy"] = 100 * df.gbps / df.copy_gbps
    for ref in ("cur", "compile"):
        t = df[df.impl == ref].set_index(["dtype", "shape"]).p50_us
        df[f"vs_{ref}"] = [
            r.p50_us / t.get((r.dtype, r.shape), float("nan")) for r in df.itertuples()
        ]
    return df


def report(df, elapsed: float) -> None:
    bad = df[df.correct == False]  # noqa: E712
    for r in bad.itertuples():
        print(f"FAILED {r.dtype} {r.shape} {r.impl}: {r.error}"[:100])
    skipped = int((df.error == "skipped (budget)").sum())
    print(f"{len(df)} rows, {len(bad)} failed, {skipped} skipped, {elapsed:.0f}s")
    short = [c[:8] for c in COLUMNS]
    for title, col in (("device us", "p50_us"), ("% of copy", "pct_copy")):
        head = f"{'dtype':8} {'shape':10} {'copy':>6} {'torch':>6} {'comp':>6} |"
        print(f"{title}\n{head}" + "".join(f"{c:>9}" for c in short))
        for (dtype, shape), g in df.groupby(["dtype", "shape"], sort=False):
            by = g.set_index("impl")
            us = by.p50_us
            line = f"{dtype[:8]:8} {shape:10} {g.copy_us.iloc[0]:6.1f} "
            line += f"{us.get('torch', float('nan')):6.1f} {us.get('compile', float('nan')):6.1f} |"
            for c in COLUMNS:
                v = by[col].get(c, float("nan"))
                line += f"{v:9.1f}" if v == v else f"{'-':>9}"
            print(line)


class Session:
    """What the softmax probes share (this one and probe_softmax6): the spec and the lab module,
    a float64 check then the device time of one candidate as a CSV row (skipped past the budget,
    failed or wrong: a row too, never timed), and the same-size copy ceilings."""

    def __init__(self, args, t0: float):
        from profkit.spec import find_spec

        self.args, self.t0 = args, t0
        self.spec = find_spec("softmax")
        self.lab = importlib.import_module("profkit_lab.softmax")
        self.device = "cpu" if args.dry_run else "cuda"
        self.rows: list[dict] = []
        self.copy_cache: dict[int, float] = {}
        self.cache: dict = {}

    def start(self) -> None:
        if not self.args.dry_run:
            from profkit import devicetime

            devicetime.TARGET_MS, devicetime.MAX_SAMPLES = 30.0, 150  # ~0.3 s per timing
        self.args.out.mkdir(parents=True, exist_ok=True)

    def measure(self, fn, shape, dtype, impl, config) -> None:
        from profkit.spec import format_shape
        from profkit.timing import check, time_case

        row = dict(dtype=dtype, shape=format_shape(shape), impl=impl, config=str(config))
        if time.monotonic() - self.t0 > self.args.budget:
            self.rows.append({**row, "correct": None, "error": "skipped (budget)"})
            return
        try:
            res = check(self.spec, fn, shape, dtype, self.device, seed=1)
            row |= dict(correct=res.correct, error=res.error, rel_err=res.rel_err)
            if res.correct and not self.args.dry_run:
                t = time_case(self.spec, fn, shape, dtype, seed=2).columns
                row |= dict(p50_us=t["device_p50_ms"] * 1e3, iqr_us=t["device_iqr_ms"] * 1e3)
                row |= dict(method=t["device_method"])
        except Exception as exc:  # out of resources, compile failure: a row, not an abort
            row |= dict(correct=False, error=f"{type(exc).__name__}: {exc}".splitlines()[0][:200])
        self.rows.append(row)

    def sweep(self, cases, candidates, real_shape: bool) -> list[tuple[str, tuple]]:
        """Per case: a same-size copy, the shipped config, candidates(shape, itemsize) (given
        the real shape, or the dry run's 3-row one), torch.softmax. Returns the shapes run."""
        from profkit.spec import DTYPE_ITEMSIZE, format_shape
        from profkit.timing import copy_gbps, resolve_callable

        lab, out = self.lab, []
        for dtype, real in cases:
            isz = DTYPE_ITEMSIZE[dtype]
            shape = (3, real[1]) if self.args.dry_run else real
            out.append((dtype, shape))
            if not self.args.dry_run:
                copy_gbps(self.spec.bytes_moved(shape, isz), self.copy_cache)
            cur = lab.launch_config(*real, isz)  # the shipped config of the real shape's class
            self.measure(lambda i, c=cur: lab.softmax_triton(i, c), shape, dtype, "cur", cur)
            for name, cfg in candidates(real if real_shape else shape, isz):
                self.measure(lambda i, c=cfg: lab.softmax_triton(i, c), shape, dtype, name, cfg)
            torch_fn = resolve_callable(self.spec.variant("torch"), self.cache)
            self.measure(torch_fn, shape, dtype, "torch", "")
            print(f"[{time.monotonic() - self.t0:5.1f}s] {dtype} {format_shape(shape)}", flush=True)
        return out


def parse_args(doc: str, budget: float) -> argparse.Namespace:
    """The softmax probes' command line; --dry-run sets TRITON_INTERPRET before triton loads."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--budget", type=float, default=budget, help="seconds before skipping the rest")
    ap.add_argument("--dry-run", action="store_true", help="CPU interpreter, 3 rows, no timing")
    ap.add_argument("--sm90", action="store_true", help="offline registers, then exit")
    args = ap.parse_args()
    if args.dry_run:
        os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported
    return args


def sweep_main(doc, budget, csv_name, cases, candidates, report, sm90=None, extra=None) -> None:
    """A long-row probe's whole run (probes 6-8): the shipped config, candidates(real shape,
    itemsize) and torch.softmax per case, no torch.compile; extra(run, df) adds columns; the CSV
    under --out, then report(df, seconds)."""
    args = parse_args(doc, budget)
    t0 = time.monotonic()
    import pandas as pd

    run = Session(args, t0)
    if args.sm90:
        if sm90 is None:
            sys.exit("this probe has no --sm90 view")
        sm90(run.lab)
        return
    run.start()
    run.sweep(cases, candidates, real_shape=True)
    df = summarize(pd.DataFrame(run.rows), run.spec, run.copy_cache).drop(columns="vs_compile")
    if extra:
        extra(run, df)
    df.to_csv(args.out / csv_name, index=False)
    report(df, time.monotonic() - t0)


def main() -> None:
    args = parse_args(__doc__, 90.0)
    t0 = time.monotonic()

    import pandas as pd

    from profkit.spec import format_shape
    from profkit.timing import resolve_callable

    run = Session(args, t0)
    if args.sm90:
        sm90(run.lab)
        return
    run.start()
    cases = run.sweep(CASES, candidates, real_shape=False)  # pass 1
    if not args.dry_run:  # pass 2: torch.compile, one compile per case
        for dtype, shape in cases:
            fn = resolve_callable(run.spec.variant("compile"), run.cache)
            run.measure(fn, shape, dtype, "compile", "")
            print(f"[{time.monotonic() - t0:5.1f}s] compile {dtype} {format_shape(shape)}")

    df = summarize(pd.DataFrame(run.rows), run.spec, run.copy_cache)
    df.to_csv(args.out / "probe_softmax4.csv", index=False)
    report(df, time.monotonic() - t0)


if __name__ == "__main__":
    main()
