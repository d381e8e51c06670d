"""Print the per-case best-peer table of stored runs, as docs/results.md carries it.

    PYTHONPATH=. python3 tools/best_peers.py RUN [RUN ...] [--profiles DIR]

RUN is a run id under DIR (default profiles/), a run directory, or a kernel's name (its newest
run). For each lab variant, dtype and shape: the lab's device p50, its best peer there (the
baseline with the lowest device p50 at that case: eager, PyTorch, torch.compile or Liger), the
peer's p50, lab / peer with the 95% interval and profkit's outcome (profkit.stats:
"faster" or "slower" only past the practical floor), and the lab's share of a same-size copy. The
pairs are the dashboard's (profkit.dashboard.speedup.best_peers), so the page and the table agree.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from profkit import store
from profkit.dashboard.common import column
from profkit.dashboard.speedup import best_peers, speedups
from profkit.errors import ProfkitError

HEAD = (
    "| kernel | lab | dtype | shape | lab us | best peer | peer us | lab / peer [95% CI] "
    "| outcome | lab % of copy |"
)


def table(run: store.Run) -> list[str]:
    """The run's rows of the table, in the sweep's order (none when nothing pairs up)."""
    cases = run.cases.set_index(run.cases["case"].astype(str))
    copy = column(cases, "pct_copy_same_size")
    kernel = run.manifest.get("kernel", "")
    rows = []
    for p in best_peers(speedups(run)):
        pct = copy.get(p.lab_case)
        rows.append(
            f"| {kernel} | {p.lab} | {p.dtype} | {p.shape} | {p.lab_ms * 1e3:.2f} "
            f"| {p.baseline} | {p.baseline_ms * 1e3:.2f} | {1 / p.speedup:.3f} "
            f"[{1 / p.high:.3f}, {1 / p.low:.3f}] | {p.outcome} "
            f"| {'' if pct is None or pct != pct else f'{pct:.1f}'} |"
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", metavar="RUN")
    parser.add_argument("--profiles", type=Path, default=None, help="where runs are stored")
    args = parser.parse_args(argv)
    lines = [HEAD, "|" + "---|" * HEAD.count(" | ") + "---|"]
    try:
        for ref in args.runs:
            run = store.load(store.resolve(ref, args.profiles))
            rows = table(run)
            if not rows:
                raise ProfkitError(f"{run.run_id}: no lab variant and baseline timed at one case")
            lines += rows
    except ProfkitError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
