"""Compact outcome tables for the matmul lab runs (kernels/NOTES.md): one row per case.

    PYTHONPATH=. python3 bench/matmul_outcome.py RUN_DIR [--vs BASELINE ...] [--probe CSV]

Per case: each Triton variant's device p50 (us), the baseline's, the best Triton variant as % of
the baseline (baseline time / ours, so > 100 is faster) with the 95% CI of stats.compare_cases,
tensor pipe % (ncu, of active cycles) for every variant, and the one NVML SM-clock sample per
case, "*" where the case carries a clock_note (power cap). Then the ncu durations of the same
kernels (one replay each, at ncu's own clock), a rough same-clock cross-check of the ratio.
--vs: the baselines, the ratio against the first (default cublas). --probe: probe_matmul.csv,
section b's interleaved rounds (persistent vs cuBLAS), ratio and clocks per round.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from profkit import stats, store


def _clock(r) -> str:
    capped = isinstance(r.get("clock_note"), str) and r["clock_note"] != ""
    return f"{r.sm_clock_mhz:.0f}{'*' if capped else ''}"


def cases_table(run: store.Run, refs: list[str]) -> list[str]:
    cases = run.cases
    kern = run.kernels
    vs = refs[0]
    ours = [v for v in cases.variant.unique() if not cases[cases.variant == v].baseline.any()]
    every = ours + refs
    head = ["dtype", "shape"] + [f"{v} us" for v in every] + ["best", "% of " + vs]
    head += ["TFLOP/s best", f"TFLOP/s {vs}"]
    head += [f"tensor % {v}" for v in every] + ["MHz " + "/".join(every)]
    head += [f"ncu us {v}" for v in every]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (dtype, shape), g in cases.groupby(["dtype", "shape"], sort=False):
        by = {r["variant"]: r for _, r in g.iterrows()}
        ref = by[vs]
        best = min(ours, key=lambda v: by[v].device_p50_ms)
        c = stats.compare_cases(ref, by[best], run.samples)  # baseline / ours: > 1 = ours faster
        cells = [dtype, shape] + [f"{by[v].device_p50_ms * 1e3:.1f}" for v in every] + [best]
        cells.append(f"{100 * c.ratio:.1f} [{100 * c.ci_low:.1f}, {100 * c.ci_high:.1f}]")
        cells += [f"{by[best].tflops:.0f}", f"{ref.tflops:.0f}"]
        cells += [f"{by[v].tensor_pipe_pct:.1f}" for v in every]
        cells.append("/".join(_clock(by[v]) for v in every))
        for v in every:
            k = kern[kern.case == by[v]["case"]]
            parts = [f"{d * 1e3:.1f}" for d in k.ncu_duration_ms]
            cells.append("+".join(parts) + f" @{k.ncu_sm_clock_mhz.iloc[0]:.0f}")
        out.append("| " + " | ".join(cells) + " |")
    n_capped = cases.clock_note.fillna("").astype(bool).sum()
    out.append(f"\ncases with a clock_note (capped): {n_capped} of {len(cases)}")
    return out


def probe_b(path: Path) -> list[str]:
    p = pd.read_csv(path)
    p = p[p.section == "b"]
    out = ["| dtype | shape | round | persistent us (MHz) | cublas us (MHz) | % of cublas |"]
    out.append("|---|---|---|---|---|---|")
    for (dtype, shape), g in p.groupby(["dtype", "shape"], sort=False):
        tot = {}
        for rnd, h in g.groupby("round"):
            by = {r.impl: r for r in h.itertuples()}
            pe, cu = by["persistent"], by["cublas"]
            tot.setdefault("p", []).append(pe.us)
            tot.setdefault("c", []).append(cu.us)
            out.append(
                f"| {dtype} | {shape} | {rnd} | {pe.us:.1f} ({pe.sm_clock_mhz:.0f}) | "
                f"{cu.us:.1f} ({cu.sm_clock_mhz:.0f}) | {100 * cu.us / pe.us:.1f} |"
            )
        out.append(
            f"| {dtype} | {shape} | sum of 3 | {sum(tot['p']):.1f} | {sum(tot['c']):.1f} | "
            f"{100 * sum(tot['c']) / sum(tot['p']):.1f} |"
        )
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("run")
    ap.add_argument("--vs", action="append", help="baselines; the ratio is against the first")
    ap.add_argument("--probe", type=Path)
    args = ap.parse_args(argv)
    run = store.load(Path(args.run))
    print("\n".join(cases_table(run, args.vs or ["cublas"])))
    if args.probe:
        print("\n".join(probe_b(args.probe)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
