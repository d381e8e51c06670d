"""One short table over stored lab runs: each lab variant against the fastest baseline, per case.

    PYTHONPATH=. python3 bench/lab_table.py RUN_DIR [RUN_DIR ...]

Per (kernel, dtype, shape) and lab variant: its device p50, the fastest correct baseline's
p50 and name, the ratio (lab / baseline: < 1 means the lab variant is faster), % of the run's
copy ceiling (memory-bound kernels) or TFLOP/s (matmul), and ncu's DRAM throughput and Tensor
Core utilization where the counter pass ran. Incorrect cases are listed with their error.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

from profkit import store
from profkit.errors import ProfkitError


def _fmt(value, spec: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return format(value, spec)


def rows_of(run: store.Run) -> list[str]:
    cases = run.cases
    out = []
    wrong = cases[~cases.correct.astype(bool)]
    for r in wrong.itertuples():
        out.append(f"  WRONG {r.variant} {r.dtype} {r.shape}: {r.error}")
    ok = cases[cases.correct.astype(bool)]
    for (dtype, shape), group in ok.groupby(["dtype", "shape"], sort=False):
        base = group[group.baseline.astype(bool)]
        best = base.loc[base.device_p50_ms.idxmin()] if base.device_p50_ms.notna().any() else None
        for r in group[~group.baseline.astype(bool)].itertuples():
            ratio = r.device_p50_ms / best.device_p50_ms if best is not None else float("nan")
            rate = (
                f"{_fmt(r.tflops, '7.1f')} TF/s"
                if r.kernel == "matmul" and r.shape.count("x") == 2 and r.flops > 1e11
                else f"{_fmt(r.pct_peak_bw, '6.1f')}% copy"
            )
            counters = (
                f"dram {_fmt(getattr(r, 'dram_throughput_pct', None), '5.1f')}%"
                f" tensor {_fmt(getattr(r, 'tensor_pipe_pct', None), '5.1f')}%"
            )
            out.append(
                f"  {dtype:<9} {shape:<17} {r.variant:<14} {r.device_p50_ms * 1e3:9.1f} us  "
                f"vs {best.variant if best is not None else '-':<8} "
                f"{best.device_p50_ms * 1e3 if best is not None else float('nan'):9.1f} us  "
                f"ratio {ratio:5.3f}  {rate}  {counters}"
                + (f"  rel_err {r.rel_err:.1e}" if r.kernel == "sum" else "")
            )
    return out


def main(paths: list[str]) -> int:
    runs = [p for p in paths if Path(p).is_dir()]
    if not runs:
        print("no stored runs")
    for path in runs:
        try:
            run = store.load(Path(path))
        except ProfkitError as exc:
            print(f"error: {exc}")
            continue
        ceil = run.manifest.get("ceilings", {})
        print(
            f"{run.manifest.get('kernel')} ({Path(path).name}; copy "
            f"{ceil.get('copy_gbps', '-')} GB/s, bf16 matmul {ceil.get('matmul_tflops', '-')} "
            f"TFLOP/s; counters {run.manifest.get('counters', {}).get('status')})"
        )
        print("\n".join(rows_of(run)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
