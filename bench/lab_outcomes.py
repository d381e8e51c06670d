"""Markdown tables of stored lab runs for kernels/NOTES.md: every variant per case, with the 95% CI
of its device-time ratio against each reference variant (stats.compare_cases).

    PYTHONPATH=. python3 bench/lab_outcomes.py RUN_DIR [--vs NAME ...] [--variant NAME ...]
        [--rel-err] [--wide --extra COLUMN ...]

--vs: the variants to compare against (default: the run's baselines). --variant: the rows to show
(default: all). Times are device p50 in microseconds (CUDA-graph replay, L2 flushed); "% copy" is
pct_peak_bw (of the run's 1 GiB copy ceiling); counters where the run has them.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from profkit import stats, store
from profkit.errors import ProfkitError


def _f(value, spec: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return format(value, spec)


def table(run: store.Run, vs: list[str], show: list[str], rel_err: bool) -> list[str]:
    cases = run.cases
    matmul = cases.flops.notna().any() and run.manifest.get("kernel") == "matmul"
    head = ["dtype", "shape", "variant", "device us", "IQR us"]
    head += ["TFLOP/s", "tensor %"] if matmul else ["% copy"]
    head += ["DRAM %", "kernels", "host us"]
    head += ["rel err"] if rel_err else []
    head += [f"vs {v}: ratio [95% CI]" for v in vs]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (dtype, shape), group in cases.groupby(["dtype", "shape"], sort=False):
        by_variant = {r["variant"]: r for _, r in group.iterrows()}
        for name, r in by_variant.items():
            if show and name not in show:
                continue
            cells = [dtype, shape, name, _f(r.device_p50_ms * 1e3, ".1f")]
            cells.append(_f(r.device_iqr_ms * 1e3, ".1f"))
            if matmul:
                cells += [_f(r.tflops, ".1f"), _f(r.get("tensor_pipe_pct"), ".1f")]
            else:
                cells.append(_f(r.pct_peak_bw, ".1f"))
            cells.append(_f(r.get("dram_throughput_pct"), ".1f"))
            cells.append(_f(r.get("kernel_count"), ".0f"))
            cells.append(_f(r.host_us, ".1f"))
            if rel_err:
                cells.append(_f(r.rel_err, ".1e"))
            for v in vs:
                ref = by_variant.get(v)
                if ref is None or name == v:
                    cells.append("")
                    continue
                c = stats.compare_cases(r, ref, run.samples)
                cells.append(f"{c.ratio:.3f} [{c.ci_low:.3f}, {c.ci_high:.3f}] {c.outcome}")
            out.append("| " + " | ".join(cells) + " |")
    return out


def wide(run: store.Run, vs: list[str], show: list[str], extra: list[str]) -> list[str]:
    """One row per case and shown variant: the device times of it and of each reference, its
    % copy (or TFLOP/s and tensor %), DRAM %, any extra columns, and its ratio against each
    reference."""
    cases = run.cases
    matmul = run.manifest.get("kernel") == "matmul"
    head = ["dtype", "shape", "variant", "us"] + [f"{v} us" for v in vs]
    head += ["TFLOP/s", "tensor %"] if matmul else ["% copy"]
    head += ["DRAM %"] + extra + [f"vs {v} [95% CI]" for v in vs]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (dtype, shape), group in cases.groupby(["dtype", "shape"], sort=False):
        by_variant = {r["variant"]: r for _, r in group.iterrows()}
        for name in show:
            r = by_variant.get(name)
            if r is None:
                continue
            cells = [dtype, shape, name, _f(r.device_p50_ms * 1e3, ".1f")]
            cells += [_f(by_variant[v].device_p50_ms * 1e3, ".1f") for v in vs]
            if matmul:
                cells += [_f(r.tflops, ".1f"), _f(r.get("tensor_pipe_pct"), ".1f")]
            else:
                cells.append(_f(r.pct_peak_bw, ".1f"))
            cells.append(_f(r.get("dram_throughput_pct"), ".1f"))
            cells += [_f(r.get(x), ".3g") for x in extra]
            for v in vs:
                c = stats.compare_cases(r, by_variant[v], run.samples)
                cells.append(f"{c.ratio:.3f} [{c.ci_low:.3f}, {c.ci_high:.3f}] {c.outcome}")
            out.append("| " + " | ".join(cells) + " |")
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("run")
    ap.add_argument("--vs", action="append", default=[])
    ap.add_argument("--variant", action="append", default=[])
    ap.add_argument("--rel-err", action="store_true")
    ap.add_argument("--wide", action="store_true", help="one row per case and --variant")
    ap.add_argument("--extra", action="append", default=[], help="another column (--wide)")
    args = ap.parse_args(argv)
    try:
        run = store.load(Path(args.run))
    except (ProfkitError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if "device_p50_ms" not in run.cases or run.cases.device_p50_ms.isna().all():
        print(f"error: {args.run} has no device times (a step-latency run? read it with "
              "`profkit explain`)", file=sys.stderr)  # fmt: skip
        return 1
    vs = args.vs or sorted(set(run.cases[run.cases.baseline.astype(bool)].variant))
    print(
        f"{run.manifest.get('kernel')} ({Path(args.run).name}; copy ceiling "
        f"{run.manifest['ceilings']['copy_gbps']} GB/s)"
    )
    if args.wide:
        print("\n".join(wide(run, vs, args.variant, args.extra)))
    else:
        print("\n".join(table(run, vs, args.variant, args.rel_err)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
