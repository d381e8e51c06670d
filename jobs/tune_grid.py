"""`profkit tune` against a plain grid search over the same parameter space (issue 34).

    python3 jobs/tune_grid.py check                          # imports, shipped configs correct
    python3 jobs/tune_grid.py grid KERNEL SHAPE DTYPE OUT    # time every configuration, in order
    python3 jobs/tune_grid.py compare RUNS GRID_DIR OUT.md   # the table

grid: every configuration of the variant's tunables at one case, in grid order, each checked
against the float64 reference and timed as capture times a case (CUDA-graph replay, L2 flushed;
capture.measure_cases, no counters); the wall time after each one is kept, so "time to reach within
2% of the grid's best" reads off the same list. compare: tune's configurations measured, the time
its first configuration within 2% of the grid's best was stored, and the grid's own timing of
tune's winner (the same process's clock as the grid's best: no cross-process offset).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pandas as pd

WITHIN = 0.02  # the goal: within 2% of the grid's best


def check() -> int:
    import torch

    from profkit.measure import correctness
    from profkit.spec import find_spec, parse_shape
    from profkit.tune.space import space_of, tunable_variant

    assert torch.cuda.is_available(), "no GPU"
    for kernel, shape in CASES.items():
        spec = find_spec(kernel)
        v = tunable_variant(spec, None)
        space = space_of(spec, v, parse_shape(shape), "bfloat16")
        assert not space.added, f"{kernel}: shipped outside the grid: {space.added}"
        fn = v.configure(space.shipped)
        chk = correctness.check(spec, fn, parse_shape(shape), "bfloat16", "cuda", seed=0)
        assert chk.correct, f"{kernel} shipped config wrong: {chk.error or chk.rel_err}"
        print(f"{kernel} {shape}: grid {space.size}, shipped {space.name(space.shipped)} ok")
    return 0


# one shape each: rmsnorm at the README example's case (at the DRAM roof there and in 82b6b9: the
# shipped-is-best case), softmax and matmul where explain saw headroom (run a879b0: softmax bf16
# 16384x8192 short of the roof, hide_latency 10.5 us; run f75dcf: matmul 4096^3 tensor_underfed)
CASES = {"rmsnorm": "4096x8192", "softmax": "16384x8192", "matmul": "4096x4096x4096"}


def grid(kernel: str, shape: str, dtype: str, out: Path) -> int:
    from rich.console import Console

    from profkit import hostenv
    from profkit.capture import CaptureOptions, measure_cases
    from profkit.spec import find_spec, parse_shape
    from profkit.tune.space import space_of, spec_file, tunable_variant

    started = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    base = find_spec(kernel)
    space = space_of(base, tunable_variant(base, None), parse_shape(shape), dtype)
    names = [space.name(p) for p in space.grid()]
    path = spec_file(out, space, None, names)
    spec = find_spec(kernel, str(path))
    console = Console(stderr=True)
    ceilings = hostenv.measure_ceilings()
    rows, samples = [], []
    for i, name in enumerate(names):
        opts = CaptureOptions(
            dtypes=(dtype,), shapes=(parse_shape(shape),), variants=(name,), root=out,
            counters=False, from_file=str(path), case_offset=i,
        )  # fmt: skip
        table, s = measure_cases(spec, opts, console, ceilings)
        table["params"] = json.dumps(space.params(name))
        table["done_at_s"] = round(time.perf_counter() - started, 2)
        rows.append(table)
        samples.append(s)
    cases = pd.concat(rows, ignore_index=True)
    cases.to_csv(out / f"grid-{kernel}.csv", index=False)
    pd.concat(samples).to_csv(out / f"grid-{kernel}-samples.csv.gz", index=False)
    (out / f"grid-{kernel}.json").write_text(
        json.dumps({"space": space.as_dict(), "shipped": space.name(space.shipped)}, indent=2)
    )
    path.unlink()
    best = cases[cases.correct.astype(bool)].sort_values("device_p50_ms").head(3)
    print(best[["variant", "params", "device_p50_ms"]].to_string(index=False))
    return 0


def compare(runs: Path, grid_dir: Path, out: Path) -> int:
    from profkit import store
    from profkit.tune.loop import tune_record

    lines = [
        "| kernel | case | grid: configs, s | grid: s to within 2% (grid order) | grid best | "
        "shipped / best | tune winner / best (grid's clock) | tune: configs | "
        "tune: s to within 2% | tune: s | stop |",
        "|" + "---|" * 11,
    ]
    figures = {}
    tune_runs = [store.load(p) for p in store.list_runs(runs)]
    for kernel, shape in CASES.items():
        g = pd.read_csv(grid_dir / f"grid-{kernel}.csv")
        meta = json.loads((grid_dir / f"grid-{kernel}.json").read_text())
        ok = g[g.correct.astype(bool)].copy()
        best = ok.loc[ok.device_p50_ms.idxmin()]
        limit = best.device_p50_ms * (1 + WITHIN)
        ms = dict(zip(ok.variant.astype(str), ok.device_p50_ms, strict=True))
        grid_reach = float(ok[ok.device_p50_ms <= limit].done_at_s.min())
        tuned = [
            r
            for r in tune_runs
            if r.manifest.get("kind") == "tune" and r.manifest.get("tuned_kernel") == kernel
        ]
        if not tuned:
            lines.append(f"| {kernel} | {shape} | no tune run |")
            continue
        run = tuned[-1]
        rec = tune_record(run) or {}
        tc = run.cases
        # the first configuration tune measured that the grid times within 2% of its best
        grid_ms = [ms.get(str(n), float("inf")) for n in tc.variant]
        close = tc[[m <= limit for m in grid_ms]]
        reach = float(close.measured_at_s.min()) if not close.empty else None
        win = str(rec.get("winner"))
        f = {
            "shape": shape,
            "grid_configs": len(g),
            "grid_correct": len(ok),
            "grid_s": float(g.done_at_s.max()),
            "grid_s_to_within": grid_reach,
            "grid_best": str(best.variant),
            "grid_best_params": best.params,
            "grid_best_us": float(best.device_p50_ms * 1e3),
            "shipped": meta["shipped"],
            "shipped_over_best": ms.get(meta["shipped"], float("nan")) / best.device_p50_ms,
            "tune_winner": win,
            "tune_winner_over_best": ms.get(win, float("nan")) / best.device_p50_ms,
            "tune_best_measured_over_best": min(grid_ms) / best.device_p50_ms,
            "tune_configs": rec.get("measured"),
            "tune_s_to_within": reach,
            "tune_s": rec.get("wall_s"),
            "stop": rec.get("stop"),
            "why": rec.get("why"),
            "run": run.run_id,
        }
        figures[kernel] = f
        lines.append(
            f"| {kernel} | bf16 {shape} | {len(g)}, {f['grid_s']:.0f} | {grid_reach:.0f} | "
            f"{best.variant} {f['grid_best_us']:.2f} us | {f['shipped_over_best']:.3f} | "
            f"{win} {f['tune_winner_over_best']:.3f} | {f['tune_configs']} | "
            f"{'not reached' if reach is None else f'{reach:.0f}'} | {f['tune_s']} | "
            f"{f['stop']} |"
        )
    lines += [f"- {k}: {f['why']}" for k, f in figures.items()]
    out.write_text("\n".join(lines) + "\n")
    out.with_suffix(".json").write_text(json.dumps(figures, indent=2) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "check":
        sys.exit(check())
    if cmd == "grid":
        sys.exit(grid(args[0], args[1], args[2], Path(args[3])))
    sys.exit(compare(Path(args[0]), Path(args[1]), Path(args[2])))
