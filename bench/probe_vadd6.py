"""vector_add session 6: can any streaming add reach 92% DRAM (ncu) from 2^26 up on the H200?

    PYTHONPATH=/tmp/site:$PWD python3 bench/probe_vadd6.py --out DIR [--budget 120]  (H200)
    TRITON_INTERPRET=1 PYTHONPATH=$PWD python3 bench/probe_vadd6.py --out DIR --dry-run  (CPU)

At 2^28 and 2^26, fp32 and bf16: torch.add(out=), the shipped kernel (`v2`) and five candidates
(kernels/vector_add.py, NOTES.md "session 6"): `cs_store` (v2 with a .cs store only), `burst`
(64 KB per operand per 16-warp program), `persist` (8 programs per SM, grid-stride, 8 KB tiles),
`persist_s3` (4 per SM, Triton's pipeliner at 3 stages), `tma` (16 KB boxes through TMA); and two
roofs, not adds: `ref_1r1w` (torch.neg, a copy's traffic) and `ref_read` (the lab's one-pass sum).
1. Each is checked against float64 on fresh inputs (bench/probe_memory.py's Probe); a wrong one is
   neither timed nor profiled. Device time: CUDA-graph replay, L2 flushed, all in this process.
2. ncu (profkit.ncu, clocks as found, caches flushed) runs this file in --child mode, which
   launches each correct candidate LAUNCHES times inside profkit NVTX ranges; the report is read
   with profkit.report: DRAM %, ncu duration, DRAM bytes read / written (median over launches).
Writes DIR/probe_vadd6.csv (one row per case) and DIR/ncu.log; the .ncu-rep stays in a temp dir
(ATen kernels make it tens of MB). Prints a table last: device us (graph p50), vs torch (over
torch.add's device us, same case), DRAM % (ncu's dram__throughput...pct_of_peak_sustained_elapsed),
ncu us (gpu__time_duration), rd+wr/model (DRAM bytes read + written over the candidate's model
bytes: under 1 when output lines are still in L2 at the kernel's end). --dry-run: tiny shapes on
the CPU, checks only, no timing, no ncu.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import torch

sys.path.insert(0, str(Path(__file__).parent))
import probe_memory  # noqa: E402  (its Probe: check, then time; a row per candidate)

from profkit.spec import format_shape  # noqa: E402

ADD, va = probe_memory.ADD, probe_memory.va
ITEMSIZE = {"float32": 4, "bfloat16": 2}
DTYPES = ("float32", "bfloat16")
LAUNCHES = 2  # profiled launches per candidate and case (the median is kept)
CHILD_MARGIN_S = 8.0  # ncu's time to finish its last kernel, write the report and exit
TIMING_SHARE = 0.5  # of the budget: timing stops here (rows 'skipped'), ncu gets the rest
METRICS = [
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__time_duration.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "launch__registers_per_thread",
]


def candidates(itemsize: int) -> dict:
    p = functools.partial
    return {
        "torch": va.add_torch,
        "v2": va.add_triton,  # shipped: 1024 elements per 128-thread program
        "cs_store": p(va.add_triton, config=(1024, 4), cs_store=True),
        "burst": p(va.add_triton, config=(65536 // itemsize, 16)),
        "persist": p(va.add_persistent, block=8192 // itemsize, per_sm=8),
        "persist_s3": p(va.add_persistent, block=8192 // itemsize, per_sm=4, stages=3),
        "tma": p(va.add_tma, box_bytes=16384),
    }


def _read_x(inputs: dict) -> torch.Tensor:
    x = inputs["x"]
    out = inputs.setdefault("sum_out", torch.empty((), device=x.device, dtype=torch.float32))
    return probe_memory.rs.sum_onepass({"x": x, "out": out})


# Not adds: the board's roofs in the same process, for the same n and dtype. `ref_1r1w` is
# torch.neg(x, out=): a copy's traffic (one read per write) in ATen's elementwise kernel, as a
# kernel ncu sees (a same-dtype copy_ is a memcpy: not profiled by ncu, and on a copy engine in a
# CUDA graph); `ref_read` the lab's one-pass sum of x (reads only; 96.7% DRAM at fp32 2^30 in
# session 5). Timed and profiled, never checked against the add's reference.
ROOFS = {"ref_1r1w": lambda inputs: torch.neg(inputs["x"], out=inputs["out"]), "ref_read": _read_x}
STREAMS = {"ref_1r1w": 2, "ref_read": 1}  # operands moved per element; an add moves 3


def model_bytes(name: str, n: int, itemsize: int) -> int:
    return STREAMS.get(name, 3) * n * itemsize


def shapes(dry: bool) -> list[tuple[int]]:
    return [(5000,), (3 * 4096 + 7,)] if dry else [(1 << 28,), (1 << 26,)]


def range_name(name: str, dtype: str, shape) -> str:
    # profkit's case form kernel.variant.dtype.shape: profkit.report parses it back
    return f"vector_add.{name}.{dtype}.{format_shape(shape)}"


def sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def child(cases_path: Path) -> None:
    """Under ncu: each listed case, a warm-up launch outside any range, then LAUNCHES launches
    each in its own profkit range (one input set per dtype and shape)."""
    from profkit.timing import nvtx_range

    job = json.loads(
        cases_path.read_text()
    )  # {"deadline": epoch s, "cases": [[dtype, n, [names]]]}
    dev = "cuda" if torch.cuda.is_available() else "cpu"  # cpu: shaking it out in the interpreter
    for dtype, n, names in job["cases"]:
        gen = torch.Generator(dev).manual_seed(21)
        inputs = ADD.make_inputs((n,), dtype, dev, gen)
        cands = {**candidates(ITEMSIZE[dtype]), **ROOFS}
        for name in names:
            if time.time() > job["deadline"]:  # stop launching, so ncu still writes its report
                print(f"child: {name} {dtype} {n} skipped: past the deadline", flush=True)
                continue
            try:
                cands[name](inputs)  # compile / warm up, unprofiled
                sync()
                for _ in range(LAUNCHES):
                    with nvtx_range(range_name(name, dtype, (n,))):
                        cands[name](inputs)
                        sync()
            except Exception as exc:  # one candidate failing must not lose the others' counters
                print(f"child: {name} {dtype} {n} failed: {exc}".splitlines()[0], flush=True)
        del inputs
        print(f"child: {dtype} {n} launched", flush=True)


def counters(out: Path, rows: list[dict], timeout_s: float) -> tuple[pd.DataFrame, str]:
    """Run the child under ncu for the correct candidates; (counter table, status line)."""
    from profkit import ncu, report

    todo: dict[tuple[str, int], list[str]] = {}
    for r in rows:
        if r.get("correct") is True:
            todo.setdefault((r["dtype"], int(r["shape"])), []).append(r["candidate"])
    if not todo:
        return pd.DataFrame(), "ncu: nothing to profile"
    try:
        import nvtx  # noqa: F401  (the child's ranges need it; ncu would profile nothing)
    except ImportError:
        return pd.DataFrame(), "ncu: skipped, the `nvtx` package is missing (PYTHONPATH=/tmp/site)"
    with tempfile.TemporaryDirectory(prefix="vadd6-") as tmp:
        cases = Path(tmp) / "cases.json"
        # the child stops launching CHILD_MARGIN_S before ncu's limit: a killed ncu writes nothing
        deadline = time.time() + timeout_s - CHILD_MARGIN_S
        job = {"deadline": deadline, "cases": [[d, n, names] for (d, n), names in todo.items()]}
        cases.write_text(json.dumps(job))
        result = ncu.run_counter_pass(
            [sys.executable, __file__, "--child", str(cases), "--out", tmp],
            Path(tmp) / "vadd6",
            timeout_s=max(timeout_s, 2 * CHILD_MARGIN_S),
            log_path=out / "ncu.log",
            metrics=METRICS,
            sections=[],
            clock_control="none",  # never lock or change the clocks there (gpu-facts.md)
        )
        status = f"ncu: {result.problem or 'ok'} in {result.wall_s:.0f} s"
        if result.report_path is None:
            return pd.DataFrame(), f"{status}: {result.message.splitlines()[0]}"
        k = report.read_report(result.report_path, METRICS).kernels
    cols = [
        "dram_throughput_pct",
        "ncu_duration_ms",
        "dram_bytes_read",
        "dram_bytes_write",
        "registers_per_thread",
    ]
    # one kernel per launch at 2^26 / 2^28 (tma launches its tail kernel only when C does not
    # divide n), so the median over kernel rows is the median over launches
    g = k.groupby(["variant", "dtype", "shape"])[cols].median().reset_index()
    g["ncu_launches"] = k.groupby(["variant", "dtype", "shape"]).size().values
    g = g.rename(columns={"variant": "candidate", "ncu_duration_ms": "ncu_us"})
    g["ncu_us"] *= 1e3
    return g, status


def roof(p: probe_memory.Probe, name: str, fn, shape, dtype: str) -> None:
    """A roof row: timed like a candidate (Probe.time), never checked; correct=True only so that
    it is profiled; on the CPU it is skipped."""
    row = dict(section="vector_add", dtype=dtype, shape=format_shape(shape), candidate=name)
    row.update(correct=True, error="roof: not an add, not checked")
    if p.device != "cuda":
        row.update(correct=False, error="roof: GPU only")
    elif p.elapsed() > probe_memory.BUDGET_S:
        row["error"] = "roof: skipped, over the probe's time budget"
    else:
        try:
            row.update(p.time(ADD, fn, shape, dtype, model_bytes(name, shape[0], ITEMSIZE[dtype])))
        except Exception as exc:
            row.update(correct=False, error=f"{type(exc).__name__}: {exc}".splitlines()[0][:300])
    p.rows.append(row)


def table(df: pd.DataFrame) -> str:
    lines = [
        f"{'candidate':<11} {'dtype':<8} {'n':>10} {'device us':>10} {'vs torch':>8} "
        f"{'DRAM %':>6} {'ncu us':>8} {'rd+wr/model':>11}"
    ]
    for r in df.itertuples():
        us = f"{r.us:.1f}" if pd.notna(getattr(r, "us", None)) else "-"
        ratio = f"{r.vs_torch:.3f}" if pd.notna(getattr(r, "vs_torch", None)) else "-"
        dram = getattr(r, "dram_throughput_pct", None)
        ncu_us = getattr(r, "ncu_us", None)
        frac = getattr(r, "dram_vs_model", None)
        lines.append(
            f"{r.candidate:<11} {r.dtype:<8} {r.shape:>10} {us:>10} {ratio:>8} "
            + (f"{dram:>6.1f} " if pd.notna(dram) else f"{'-':>6} ")
            + (f"{ncu_us:>8.1f} " if pd.notna(ncu_us) else f"{'-':>8} ")
            + (f"{frac:>11.3f}" if pd.notna(frac) else f"{'-':>11}")
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--budget", type=float, default=120.0, help="wall seconds, ncu included")
    ap.add_argument("--dry-run", action="store_true", help="CPU interpreter, checks only")
    ap.add_argument("--child", type=Path, help=argparse.SUPPRESS)  # the run under ncu
    args = ap.parse_args()
    if args.child:
        child(args.child)
        return
    args.out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    device = "cpu" if args.dry_run else "cuda"
    probe_memory.BUDGET_S = TIMING_SHARE * args.budget  # Probe.run records 'skipped' past it
    p = probe_memory.Probe(device, t0)
    for shape in shapes(args.dry_run):  # largest first: the budget guard drops the small ones
        for dtype in DTYPES:
            nbytes = ADD.bytes_moved(shape, ITEMSIZE[dtype])
            for name, fn in candidates(ITEMSIZE[dtype]).items():
                p.run("vector_add", ADD, name, fn, shape, dtype, nbytes)
            for name, fn in ROOFS.items():
                roof(p, name, fn, shape, dtype)
            print(f"{dtype} {format_shape(shape)} timed at {p.elapsed():.0f} s", flush=True)

    df = pd.DataFrame(p.rows).drop(columns="section")
    csv = args.out / "probe_vadd6.csv"
    df.to_csv(csv, index=False)  # first: a failure below loses nothing
    if "us" in df:  # < 1: faster than torch.add in the same process
        base = df[df.candidate == "torch"].set_index(["dtype", "shape"]).us
        df["vs_torch"] = [
            us / base.get((d, s), float("nan"))
            for us, d, s in zip(df.us, df.dtype, df["shape"], strict=True)
        ]
    status = "ncu: not run (--dry-run)"
    if not args.dry_run:
        torch.cuda.empty_cache()  # the child allocates its own inputs
        left = args.budget - p.elapsed() - 5.0  # 5 s to read the report and print
        try:
            c, status = counters(args.out, p.rows, left)
        except Exception as exc:  # a report that cannot be read: keep the timings
            c, status = pd.DataFrame(), f"ncu: failed: {type(exc).__name__}: {exc}"[:200]
        if not c.empty:
            df = df.merge(c, on=["candidate", "dtype", "shape"], how="left")
            model = [
                model_bytes(c, int(s), ITEMSIZE[d])
                for c, d, s in zip(df.candidate, df.dtype, df["shape"], strict=True)
            ]
            df["dram_vs_model"] = (df.dram_bytes_read + df.dram_bytes_write) / model
    df.to_csv(csv, index=False)

    for r in df[~df.correct.astype(bool) & ~df.candidate.isin(list(ROOFS))].itertuples():
        print(f"FAILED {r.dtype} {r.shape} {r.candidate}: {r.error}"[:100])
    print(status[:100])
    print(f"wall {p.elapsed():.0f} s; CSV {csv}")
    print(table(df))


if __name__ == "__main__":
    main()
