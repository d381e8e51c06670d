"""Probe the softmax's launch configs beside torch.softmax and torch.compile, at every default
shape and dtype, to choose kernels/softmax.py's CONFIG entries.

    PYTHONPATH=/tmp/site:$PWD python3 bench/probe_softmax.py --out DIR [--budget 110]
    PYTHONPATH=$PWD python3 bench/probe_softmax.py --out DIR --dry-run   # CPU interpreter

Every implementation is checked against the float64 reference on fresh inputs first; a wrong or
crashing one is recorded (correct=False, error) and never timed. Device time: CUDA-graph replay
with the L2 flushed before each call (profkit.devicetime), fewer samples than a capture (a
probe). Pass 1 times the baselines and the current config (`triton`) at every case, pass 2 the
candidates; once --budget seconds have passed, what is left is recorded as skipped.
--dry-run: 3 rows of each length on the CPU through Triton's interpreter, checks only (no timing).

Writes DIR/probe_softmax.csv (one row per case x implementation) and prints one line per case.
"""

from __future__ import annotations

import argparse
import importlib
import os
import time
from pathlib import Path


def candidates(shape, itemsize: int) -> list[tuple[str, tuple]]:
    """(name, softmax_triton config) per shape class, beyond the current launch_config."""
    rows, cols = shape
    bn = 1 << (cols - 1).bit_length()
    out = []
    if cols <= 2048:  # short: more or fewer rows per program, fewer warps; r1w8 is (unverified)
        # what inductor's persistent reduction picks for an inner 1024-long reduction
        rw = ((1, 4), (1, 8), (2, 4), (4, 4), (1, 2))
        out += [(f"r{r}w{w}", ("rows", bn, r, w)) for r, w in rw]
    elif (
        8192 < cols <= 16384
    ):  # wide (the 16384-column class); "narrow": the current config, NARROW
        out += [("narrow", None), ("r1w16", ("rows", bn, 1, 16)), ("r1w32", ("rows", bn, 1, 32))]
        out += [("loop8192w16", ("loop", 8192, 1, 16)), ("loop4096w16", ("loop", 4096, 1, 16))]
    elif cols > 16384:  # long rows
        out += [("loop8192w16", ("loop", 8192, 1, 16)), ("loop4096w16", ("loop", 4096, 1, 16))]
        out += [("loop2048w8", ("loop", 2048, 1, 8))]
        if bn <= 32768:
            out += [("r1w32", ("rows", bn, 1, 32))]
        out += [("r1w32narrow", ("rows", bn, 1, 32, True))]
        out += [("split8192s3w16", ("split", 8192, 3, 16))]
        out += [("split4096s16w16", ("split", 4096, 16, 16))]
    return out


def summarize(df, spec, copy_cache: dict):
    """Add bandwidth, the same-size copy's, % of it and the time over compile's."""
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
    df["pct_copy"] = 100 * df.gbps / df.copy_gbps
    comp = df[df.impl == "compile"].set_index(["dtype", "shape"]).p50_us
    df["vs_compile"] = [
        r.p50_us / comp.get((r.dtype, r.shape), float("nan")) for r in df.itertuples()
    ]
    return df


def report(df, elapsed: float) -> None:
    import pandas as pd

    bad = df[df.correct == False]  # noqa: E712
    for r in bad.itertuples():
        print(f"FAILED {r.dtype} {r.shape} {r.impl}: {r.error}"[:100])
    skipped = int((df.error == "skipped (budget)").sum())
    print(f"{len(df)} rows, {len(bad)} failed, {skipped} skipped, {elapsed:.0f}s")
    # per case: baselines, the current config (cur), and the fastest correct Triton config (best,
    # possibly cur itself) with its % of copy and its time over compile's
    print("dtype    shape       torch   comp    cur  %cpy  best              us  %cpy vs_comp")
    nan = float("nan")
    for (dtype, shape), g in df.groupby(["dtype", "shape"], sort=False):
        by = g.set_index("impl")
        tri = g[~g.impl.isin(["torch", "compile"]) & g.p50_us.notna()].sort_values("p50_us")
        b = tri.iloc[0] if len(tri) else pd.Series(dict(impl="-", p50_us=nan, pct_copy=nan))
        cur_pct = by.pct_copy.get("triton", nan)
        print(
            f"{dtype[:8]:8} {shape:11} {by.p50_us.get('torch', nan):6.1f} "
            f"{by.p50_us.get('compile', nan):6.1f} {by.p50_us.get('triton', nan):6.1f} "
            f"{cur_pct:5.1f}  {b.impl[:15]:15} {b.p50_us:6.1f} {b.pct_copy:5.1f} "
            f"{b.get('vs_compile', nan):6.3f}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--budget", type=float, default=100.0, help="seconds before skipping the rest")
    ap.add_argument(
        "--dry-run", action="store_true", help="CPU interpreter, tiny shapes, no timing"
    )
    args = ap.parse_args()
    if args.dry_run:
        os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported
    t0 = time.monotonic()

    import pandas as pd

    from profkit.spec import DTYPE_ITEMSIZE, find_spec, format_shape
    from profkit.timing import check, copy_gbps, resolve_callable

    spec = find_spec("softmax")
    lab = importlib.import_module("profkit_lab.softmax")
    device = "cpu" if args.dry_run else "cuda"
    if not args.dry_run:
        from profkit import devicetime
        from profkit.timing import time_case

        devicetime.TARGET_MS, devicetime.MAX_SAMPLES = 40.0, 200  # a probe: ~0.3 s per timing

    def shrink(shape):  # dry run: 3 rows of the real length, so the candidates are the same
        return (3, shape[1]) if args.dry_run else shape

    args.out.mkdir(parents=True, exist_ok=True)
    rows_out: list[dict] = []
    copy_cache: dict[int, float] = {}
    cache: dict = {}

    def measure(fn, shape, dtype, impl, config) -> None:
        row = dict(dtype=dtype, shape=format_shape(shape), impl=impl, config=str(config))
        if time.monotonic() - t0 > args.budget:
            rows_out.append({**row, "correct": None, "error": "skipped (budget)"})
            return
        try:
            res = check(spec, fn, shape, dtype, device, seed=1)
            row |= dict(correct=res.correct, error=res.error, rel_err=res.rel_err)
            if res.correct and not args.dry_run:
                t = time_case(spec, fn, shape, dtype, seed=2).columns
                row |= dict(p50_us=t["device_p50_ms"] * 1e3, iqr_us=t["device_iqr_ms"] * 1e3)
                row |= dict(method=t["device_method"])
        except Exception as exc:  # out of resources, compile failure: a row, not an abort
            row |= dict(correct=False, error=f"{type(exc).__name__}: {exc}".splitlines()[0][:200])
        rows_out.append(row)

    cases = [(d, shrink(s)) for d in spec.dtypes for s in spec.shapes]
    for dtype, shape in cases:  # pass 1: baselines and the current config
        isz = DTYPE_ITEMSIZE[dtype]
        for name in ("torch",) + (() if args.dry_run else ("compile",)):
            measure(resolve_callable(spec.variant(name), cache), shape, dtype, name, "")
        cfg = lab.launch_config(*shape, isz)
        measure(lambda i, c=cfg: lab.softmax_triton(i, c), shape, dtype, "triton", cfg)
        if not args.dry_run:
            copy_gbps(spec.bytes_moved(shape, isz), copy_cache)
        print(f"[{time.monotonic() - t0:5.1f}s] pass 1 {dtype} {format_shape(shape)}", flush=True)
    # pass 2: candidates not equal to the current config, the classes furthest from the goal
    # first (what the budget cuts is at the end)
    first = {"wide": 0, "long": 1, "few_long": 2, "short": 3, "mid": 4}
    for dtype, shape in sorted(cases, key=lambda c: first[lab.shape_class(*c[1])]):
        isz = DTYPE_ITEMSIZE[dtype]
        current = lab.launch_config(*shape, isz)
        for name, cfg in candidates(shape, isz):
            if cfg is None:  # the current config, NARROW
                if isz != 2 or current[0] != "rows":
                    continue
                cfg = (*current[:4], True)
            if cfg[-1] is True and isz != 2:
                continue
            if tuple(cfg) + (False,) * (5 - len(cfg)) == tuple(current):
                continue
            measure(lambda i, c=cfg: lab.softmax_triton(i, c), shape, dtype, name, cfg)
        print(f"[{time.monotonic() - t0:5.1f}s] pass 2 {dtype} {format_shape(shape)}", flush=True)

    df = summarize(pd.DataFrame(rows_out), spec, copy_cache)
    df.to_csv(args.out / "probe_softmax.csv", index=False)
    report(df, time.monotonic() - t0)


if __name__ == "__main__":
    main()
