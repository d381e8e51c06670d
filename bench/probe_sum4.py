"""The sum's stage-1 loop on the H200: whole blocks unmasked (shipped) vs the masked loop.

    PYTHONPATH=/tmp/site:$PWD python3 bench/probe_sum4.py --out DIR      (H200, ~35-45 s)
    TRITON_INTERPRET=1 PYTHONPATH=$PWD python3 bench/probe_sum4.py --out DIR --dry-run   (CPU)

Cases, largest first (the budget guard drops what is left, as 'skipped' rows): fp32 2^30, bf16
2^30, fp32 2^28, fp32 2^24. Candidates: `tree` and `onep` (the shipped sum_tree / sum_onepass:
whole-block loop at 8 warps, i.e. fp32; the masked loop at 16 warps, i.e. bf16), `tree_mask` and
`onep_mask` (fp32: the masked loop, the run-4f4876 kernels), `onep_whole` (bf16: the whole-block
loop forced at 16 warps, 50 registers, 2 programs per SM), and torch.sum. Each is checked against
float64 on fresh inputs first (profkit.timing.check); a wrong one is never timed. Device time:
CUDA-graph replay with L2 flush (profkit.devicetime), all in this process. The ceiling: a device
copy of the input's bytes (devicetime.measure_copy, read + written), per case.
Writes DIR/probe_sum4.csv; prints a table last.
--dry-run: tiny shapes on the CPU (interpreter), checks only, no timing.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import time
from pathlib import Path

import pandas as pd
import torch

from profkit.spec import find_spec
from profkit.timing import check

BUDGET_S = 40.0  # no new timing past this (the task's budget: 45 s, compiles included)
SUM = find_spec("sum")
rs = importlib.import_module("profkit_lab.reduce_sum")
ITEMSIZE = {"float32": 4, "bfloat16": 2}


def candidates(dtype: str) -> dict:
    out = {"torch": rs.sum_torch, "tree": rs.sum_tree, "onep": rs.sum_onepass}
    if dtype == "float32":  # shipped: whole blocks; the masked loop for comparison
        out["tree_mask"] = functools.partial(rs.sum_tree, whole=False)
        out["onep_mask"] = functools.partial(rs.sum_onepass, whole=False)
    else:  # shipped: masked (16 warps); whole blocks forced, at half the resident programs
        out["onep_whole"] = functools.partial(rs.sum_onepass, whole=True)
    return out


def time_row(fn, n: int, dtype: str, nbytes: int) -> dict:
    from profkit import devicetime

    inputs = SUM.make_inputs((n,), dtype, "cuda", torch.Generator("cuda").manual_seed(12))
    s = devicetime.measure(lambda: fn(inputs)).summary()
    us = s["device_p50_ms"] * 1e3
    return dict(
        us=us, iqr_us=s["device_iqr_ms"] * 1e3, reps=s["device_reps"], tbps=nbytes / us / 1e6
    )


def copy_row(nbytes: int) -> dict:
    from profkit import devicetime

    c = devicetime.measure_copy(nbytes)
    us = c["device_p50_ms"] * 1e3
    return dict(us=us, iqr_us=c["device_iqr_ms"] * 1e3, reps=c["device_reps"], tbps=c["gbps"] / 1e3)


def run_case(n: int, dtype: str, device: str, t0: float, rows: list[dict]) -> None:
    nbytes = SUM.bytes_moved((n,), ITEMSIZE[dtype])
    timing = device == "cuda"
    for name, fn in candidates(dtype).items():
        row = dict(dtype=dtype, n=n, candidate=name)
        try:
            c = check(SUM, fn, (n,), dtype, device, seed=11)
            row.update(correct=c.correct, rel_err=c.rel_err, error=c.error)
            if c.correct and timing:
                if time.monotonic() - t0 > BUDGET_S:
                    row["error"] = "skipped: over the probe's time budget"
                else:
                    row.update(time_row(fn, n, dtype, nbytes))
        except Exception as exc:  # compile failure, out of resources: a row, not an abort
            row.update(correct=False, error=f"{type(exc).__name__}: {exc}".splitlines()[0][:300])
        rows.append(row)
        if timing:
            torch.cuda.empty_cache()  # 2^30 fp32: 4 GB inputs, 8 GB float64 reference per check
    if timing and time.monotonic() - t0 <= BUDGET_S:
        row = dict(dtype=dtype, n=n, candidate="copy", correct=True)
        try:
            row.update(copy_row(n * ITEMSIZE[dtype]))
        except Exception as exc:
            row.update(correct=False, error=f"{type(exc).__name__}: {exc}".splitlines()[0][:300])
        rows.append(row)
    print(f"{dtype} {n} done at {time.monotonic() - t0:.0f} s", flush=True)


def derive(df: pd.DataFrame) -> pd.DataFrame:
    """vs_torch: time over torch.sum's (< 1 faster); bw_vs_torch: torch's time over ours (the
    goal's '% of torch's bandwidth'); pct_copy: our bytes/s over the same-size copy's."""
    if "us" not in df:
        return df
    key = list(zip(df.dtype, df.n, strict=True))
    torch_us = df[df.candidate == "torch"].set_index(["dtype", "n"]).us
    copy_tbps = df[df.candidate == "copy"].set_index(["dtype", "n"]).tbps
    df["vs_torch"] = [us / torch_us.get(k, float("nan")) for us, k in zip(df.us, key, strict=True)]
    df["bw_vs_torch"] = 1 / df.vs_torch
    cp = [copy_tbps.get(k, float("nan")) for k in key]
    df["pct_copy"] = [100 * t / c for t, c in zip(df.tbps, cp, strict=True)]
    return df


def table(df: pd.DataFrame) -> str:
    cols = ["dtype", "n", "candidate", "correct", "rel_err"]
    cols += [c for c in ("us", "iqr_us", "tbps", "pct_copy", "vs_torch", "bw_vs_torch") if c in df]
    fmt = {"rel_err": "{:.2e}".format, "us": "{:.1f}".format, "iqr_us": "{:.1f}".format}
    fmt |= {c: "{:.3f}".format for c in ("tbps", "vs_torch", "bw_vs_torch")}
    fmt["pct_copy"] = "{:.1f}".format
    return df[cols].to_string(index=False, formatters=fmt, na_rep="-")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument(
        "--dry-run", action="store_true", help="CPU interpreter, tiny shapes, no timing"
    )
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    device = "cpu" if args.dry_run else "cuda"
    big = [(1 << 30, "float32"), (1 << 30, "bfloat16"), (1 << 28, "float32"), (1 << 24, "float32")]
    cases = [(20000, "float32"), (20000, "bfloat16"), (4097, "float32")] if args.dry_run else big
    rows: list[dict] = []
    for n, dtype in cases:
        run_case(n, dtype, device, t0, rows)
        pd.DataFrame(rows).to_csv(args.out / "probe_sum4.csv", index=False)  # partial, kept
    df = derive(pd.DataFrame(rows))
    df.to_csv(args.out / "probe_sum4.csv", index=False)
    print(table(df))
    for r in df[~df.correct.astype(bool)].itertuples():
        print(f"FAILED {r.dtype} {r.n} {r.candidate}: {r.error}"[:100])
    print(f"wall {time.monotonic() - t0:.0f} s; CSV {args.out / 'probe_sum4.csv'}")


if __name__ == "__main__":
    main()
