"""Issue 7's open agreement question, one step further: does a kernel-timestamp span (CUPTI, read
through torch.profiler) of each call inside the graph replay agree with ncu's gpu__time_duration
better than the event window does?

    python3 bench/cupti_probe.py --out DIR          # device: events and CUPTI; then ncu (5 calls)

Per case it writes, into DIR/cupti_probe.csv:
- event_p50_us: profkit.devicetime as shipped (event pair around each call, empty pair subtracted);
- span_p50_us (p5, p95): CUPTI kernel timestamps in the same kind of graph (flush, call, ...):
  the call's first kernel start to its last kernel end;
- gap_p50_us: the flush's end to the call's first kernel start (the launch inside the graph);
- ncu_p50_us: ncu's gpu__time_duration summed over the call's launches, median of 5 calls, with
  the clocks as found (--clock-control none, as profkit's capture runs ncu); ncu_base_p50_us the
  same under ncu's default --clock-control base (session 4's probe compared against this one);
- wall_s: what the CUPTI sampling of one case cost on the host.
"""

from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from profkit import devicetime
from profkit.spec import find_spec
from profkit.timing import resolve_callable


def cases() -> dict:
    one = torch.zeros(1, device="cuda")
    out = {"add_1_element": lambda: one.add_(1), "fill_1_element": lambda: one.fill_(0)}
    for dt, shape in [("float32", (1, 4096)), ("float32", (16, 8192)), ("bfloat16", (4096, 8192))]:
        x = torch.randn(*shape, device="cuda", dtype=getattr(torch, dt))
        w = torch.ones(shape[1], device="cuda", dtype=x.dtype)
        name = f"native_{dt}_{shape[0]}x{shape[1]}"
        out[name] = lambda x=x, w=w: F.rms_norm(x, (x.shape[1],), w, 1e-6)
    spec, prepared = find_spec("rmsnorm"), {}
    for var, dt, shape in [
        ("triton", "float32", (1, 4096)),
        ("triton", "float16", (4096, 8192)),
        ("eager", "float32", (16, 8192)),
        ("triton", "float32", (16, 8192)),
        ("triton", "float16", (16, 8192)),
        ("triton", "bfloat16", (32, 16384)),
        ("native", "bfloat16", (16, 8192)),
        ("native", "float32", (32, 16384)),
        ("compile", "float16", (1, 4096)),
    ]:
        fn = resolve_callable(spec.variant(var), prepared)
        inp = spec.make_inputs(shape, dt, "cuda", torch.Generator(device="cuda").manual_seed(0))
        out[f"{var}_{dt}_{shape[0]}x{shape[1]}"] = lambda fn=fn, inp=inp: fn(inp)
    return out


def gpu_ops(prof_fn) -> list[tuple[float, float, str]]:
    """(start_us, end_us, name) of every GPU activity recorded while prof_fn runs."""
    with devicetime.kernel_trace() as trace:
        prof_fn()
    if trace.error:
        raise RuntimeError(trace.error)
    return [(start * 1e3, end * 1e3, name) for start, end, name in trace.ops]


def spans(fn, flush, calls: int = 50, replays: int = 6) -> dict:
    for _ in range(3):
        flush()
        fn()
    torch.cuda.synchronize()
    f_ops, k_ops = gpu_ops(flush), gpu_ops(fn)
    nf, nk = len(f_ops), len(k_ops)
    names = {o[2] for o in f_ops + k_ops}
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn()
        fn()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(calls):
            flush()
            fn()
    g.replay()
    torch.cuda.synchronize()
    t0 = time.perf_counter()

    def go():
        for _ in range(replays):
            g.replay()

    ops = [o for o in gpu_ops(go) if o[2] in names]  # e.g. a replay prologue's own fills
    wall = time.perf_counter() - t0
    per = nf + nk
    if len(ops) != per * calls * replays:
        return {"error": f"{len(ops)} ops, expected {per}x{calls}x{replays}", "nf": nf, "nk": nk}
    sp, gap = [], []
    for c in range(calls * replays):
        grp = ops[c * per : (c + 1) * per]
        f_end, k = grp[nf - 1][1], grp[nf:]
        sp.append(k[-1][1] - k[0][0])
        gap.append(k[0][0] - f_end)
    sp, gap = np.array(sp), np.array(gap)
    return {
        "span_p50_us": np.median(sp),
        "span_mean_us": float(np.mean(sp)),
        "span_p5_us": np.percentile(sp, 5),
        "span_p95_us": np.percentile(sp, 95),
        "gap_p50_us": np.median(gap),
        "nf": nf,
        "nk": nk,
        "wall_s": wall,
    }


def under_ncu() -> None:
    import nvtx

    flush = devicetime._flusher(False)
    for name, fn in cases().items():
        fn()
        torch.cuda.synchronize()
        for i in range(5):
            flush()
            torch.cuda.synchronize()
            with nvtx.annotate(f"{name}.{i}", domain="cp"):
                fn()
                torch.cuda.synchronize()


def ncu_medians(out: Path, clock: str) -> dict:
    cmd = [
        "ncu",
        "--clock-control",
        clock,
        "--cache-control",
        "all",
        "--nvtx",
        "--nvtx-include",
        "regex:cp@.+/",
        "--metrics",
        "gpu__time_duration.sum",
        "--csv",
        "--page",
        "raw",
        "--print-units",
        "base",
        sys.executable,
        __file__,
        "--ncu-child",
    ]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    (out / f"ncu-{clock}.csv").write_text(res.stdout)
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith('"')]
    rows = list(csv.DictReader(lines))[1:]
    per_call: dict = {}
    for r in rows:
        ctx = next(v for k, v in r.items() if k.startswith("thread Domain"))
        label = ctx.split("cp:")[1].split(":")[0]
        case, _, i = label.rpartition(".")
        dur = float(r["gpu__time_duration.sum"].replace(",", "")) / 1e3
        per_call.setdefault(case, {}).setdefault(i, 0.0)
        per_call[case][i] += dur
    return {c: float(np.median(list(v.values()))) for c, v in per_call.items()}


def main() -> None:
    if "--ncu-child" in sys.argv:
        return under_ncu()
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    out = Path(ap.parse_args().out)
    out.mkdir(parents=True, exist_ok=True)
    flush = devicetime._flusher(False)
    rows = []
    one = torch.zeros(1, device="cuda")
    for trial in range(2):  # the first session pays CUPTI's start; later ones are what a case pays
        t0 = time.perf_counter()
        for _ in range(20):
            with devicetime.kernel_trace() as trace:
                one.add_(1)
        print(
            f"session cost (trial {trial}): {(time.perf_counter() - t0) / 20 * 1e3:.1f} ms, "
            f"{len(trace.ops)} op(s), error {trace.error!r}",
            flush=True,
        )
    for name, fn in cases().items():
        row = {"case": name}
        try:
            t0 = time.perf_counter()
            s = devicetime.measure(fn).summary()
            row["event_wall_s"] = time.perf_counter() - t0
            row["event_p50_us"] = s["device_p50_ms"] * 1e3
            row.update(spans(fn, flush))
        except Exception as exc:  # one failing case must not cost the others
            row["error"] = f"{type(exc).__name__}: {exc}"[:200]
        rows.append(row)
        print(
            name,
            {k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()},
            flush=True,
        )
    med = {}
    for clock in ("none", "base"):
        try:
            med[clock] = ncu_medians(out, clock)
        except Exception as exc:
            print(f"ncu ({clock}) failed:", exc)
            med[clock] = {}
    keys = [
        "case",
        "event_p50_us",
        "span_p50_us",
        "span_p5_us",
        "span_p95_us",
        "gap_p50_us",
        "ncu_p50_us",
        "ncu_base_p50_us",
        "span_mean_us",
        "nf",
        "nk",
        "wall_s",
        "event_wall_s",
        "error",
    ]
    with open(out / "cupti_probe.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            r["ncu_p50_us"] = med["none"].get(r["case"])
            r["ncu_base_p50_us"] = med["base"].get(r["case"])
            w.writerow(r)
    print(f"{'case':28} {'event':>8} {'span':>8} {'ncu':>8} {'ev-ncu':>7} {'sp-ncu':>7} {'gap':>6}")
    for r in rows:
        e, s, n = r.get("event_p50_us"), r.get("span_p50_us"), r.get("ncu_p50_us")

        def f(v):
            return f"{v:8.2f}" if isinstance(v, float) else f"{'-':>8}"

        def d(a, b):
            return f"{a - b:7.2f}" if isinstance(a, float) and isinstance(b, float) else "      -"

        print(
            f"{r['case']:28} {f(e)} {f(s)} {f(n)} {d(e, n)} {d(s, n)} "
            f"{r.get('gap_p50_us', float('nan')):6.2f} {r.get('error', '')}"
        )


if __name__ == "__main__":
    main()
