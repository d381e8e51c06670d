"""Session-6 matmul probe: split-K with in-kernel reduction (Config REDUCE "last": the tile's
last-arriving split sums the fp32 partials, one launch) for decode M = 128 / 64 / 32 at
N = K = 8192, beside the shipped DECODE entries, deeper tiled pipelines, descriptor (TMA) loads,
the persistent kernel at BN 64, and the 4096^3 persistent alternatives; bf16 and fp16, cuBLAS
(torch.matmul(out=)) in the same process.

    PYTHONPATH=/tmp/site:$PWD python3 bench/probe_matmul6.py --out DIR     # H200, ~110-150 s
    TRITON_INTERPRET=1 PYTHONPATH=$PWD python3 bench/probe_matmul6.py --out DIR --dry-run  # CPU

Method as bench/probe_matmul4.py (whose Probe, summary and table it reuses): every candidate is
checked against the float64 reference on fresh inputs first (a wrong or failing one is a row,
never timed), then timed in 2 interleaved rounds beside cuBLAS (cuBLAS first in round 1, last in
round 2), samples pooled; pct_cublas = cuBLAS median / ours (> 100: faster) with the bootstrap
95% CI of profkit.stats.compare_samples. Order: M = 128, 4096^3, M = 64, M = 32 (the budget cuts
the last first). Writes DIR/probe_matmul6.csv (one row per check and per timing round),
DIR/probe_matmul6_summary.csv, and prints the summary table last.
Candidates that cannot launch or spill on sm_90 were dropped offline (bench/sm90_compile.py
matmul_probe6; registers and shared memory in kernels/NOTES.md, matmul session 6).
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import probe_matmul4 as p4  # noqa: E402

LAB = p4.LAB
C = LAB.Config


def last(bm, bn, bk, split_k, stages, warps, tma=False):
    """Split-K with the in-kernel (last-arriver) reduction."""
    return C(bm, bn, bk, 8, stages, warps, 1, split_k, "last", tma)


# (kernel, config) per shape class; the first row of each is the shipped default.
# Shared memory per program: stages x (BM*BK + BK*BN) x 2 B (+ the persistent epilogue's
# BM*BN/SUBTILE*2 B); 227 KB per block at most. Programs at N = 8192: N / BN x SPLIT_K.
CANDIDATES = {
    "m128": [
        ("triton", LAB.DECODE[128]),  # 128x64x64 s8 w4: 38.7 us, 92.7% (run 250e7d)
        ("triton", C(128, 64, 64, 8, 6, 4)),  # 144 KB
        ("triton", C(128, 64, 64, 8, 9, 4)),  # 216 KB: the deepest that fits at BK 64
        ("triton", C(128, 64, 128, 8, 4, 4)),  # 192 KB: the deepest at BK 128
        ("triton", C(128, 64, 64, 8, 8, 4, tma=True)),  # shipped, loads through descriptors
        ("triton", C(128, 128, 64, 8, 3, 8, 1, 4)),  # session 3's split-K, reduce launch
        ("triton", last(128, 128, 64, 4, 3, 8)),  # ... reduced in-kernel: the launch's cost
        ("triton", last(128, 128, 64, 4, 3, 4)),  # 256 programs, 96 KB: 2 per SM
        ("triton", last(128, 128, 64, 2, 6, 4)),  # 128 programs, 192 KB, half of A's re-reads
        ("triton", last(128, 128, 64, 2, 6, 8)),
        ("triton", last(128, 128, 64, 2, 6, 4, tma=True)),
        ("triton", last(128, 256, 64, 4, 4, 8)),  # 128 programs, 192 KB, a quarter of A's
        ("triton", last(128, 256, 64, 4, 3, 8)),
        ("persistent", C(128, 64, 64, 8, 6, 4)),  # TMA, BN 64, 128 programs
        ("persistent", C(128, 64, 64, 8, 8, 4)),
    ],
    "4096": [
        ("persistent", LAB.PERSISTENT_LARGE["short"]),  # 128x256x64 s3 w8 sub2: 97.0 / 96.9%
        ("persistent", C(128, 256, 64, 16, 3, 8, 2)),  # GROUP_M 16: 97.7% bf16 in session 4
        ("persistent", C(128, 256, 64, 8, 4, 8, 2)),  # 4 stages, 224 KB
        ("persistent", C(128, 256, 128, 8, 2, 8, 2)),  # BK 128, 2 stages
        ("persistent", C(128, 128, 128, 8, 3, 8, 1)),  # BK 128, 3 stages: 208 KB at BN 128
    ],
    "m64": [
        ("triton", LAB.DECODE[64]),  # 64x128x64 s3 w4 split4 (reduce launch); never measured
        ("triton", C(64, 64, 64, 8, 8, 4)),  # 128 programs, 128 KB
        ("triton", C(64, 64, 128, 8, 6, 4)),  # 192 KB
        ("triton", last(64, 128, 64, 4, 3, 4)),  # the shipped entry reduced in-kernel
        ("triton", last(64, 128, 64, 2, 8, 4)),  # 128 programs, 192 KB
        ("triton", last(64, 256, 64, 4, 5, 4)),  # 128 programs, 200 KB
        ("persistent", C(64, 64, 64, 8, 8, 4)),
    ],
    "m32": [
        ("triton", LAB.DECODE[32]),  # 32x64x128 s4 w4
        ("triton", C(32, 64, 128, 8, 8, 4)),  # 192 KB
        ("triton", last(32, 128, 64, 2, 8, 4)),  # 128 programs, 160 KB
        ("triton", last(32, 256, 64, 4, 6, 4)),  # 128 programs, 216 KB
    ],
    # second round (session 6, call 2), after call 1 found split-K and TMA slower at M = 128 and
    # M = 32 slower than M = 64 (39 against 35 us) at the same 128-program grid
    "m128b": [
        ("triton", LAB.DECODE[128]),
        (
            "triton",
            C(64, 64, 64, 8, 6, 4),
        ),  # 256 programs, 96 KB: 2 per SM, B tile users adjacent
        ("triton", C(64, 64, 128, 8, 3, 4)),  # the same at BK 128
        ("triton", C(64, 128, 64, 8, 4, 4)),  # 128 programs, 96 KB
        (
            "triton",
            last(128, 64, 64, 2, 4, 4),
        ),  # 256 programs, 96 KB: 2 per SM
        ("triton", C(128, 32, 64, 8, 5, 4)),  # 256 programs, 100 KB
        ("triton", C(128, 64, 64, 8, 9, 8)),  # 8 warps issuing the copies
    ],
    "m32b": [
        ("triton", LAB.DECODE[32]),
        ("triton", C(64, 64, 64, 8, 8, 4)),  # M = 64's kernel, rows past 32 wrap (never stored)
        ("triton", C(64, 64, 128, 8, 6, 4)),
        ("triton", C(32, 64, 64, 8, 8, 4)),
        ("triton", C(32, 64, 64, 8, 12, 4)),  # 144 KB
        ("triton", C(16, 64, 128, 8, 4, 4)),  # M = 16's kernel, 2 row tiles: 256 programs
        ("triton", C(32, 64, 128, 8, 4, 8)),
    ],
    # third round (session 6, call 4): the K walk rotated per N tile (Config rot), and BK 32
    "m128r": [
        ("triton", LAB.DECODE[128]),
        ("triton", C(128, 64, 64, 8, 8, 4, rot=True)),
        ("triton", C(128, 64, 64, 8, 9, 4, rot=True)),
        ("triton", C(128, 64, 32, 8, 16, 4)),  # 192 KB: more, smaller steps in flight
        ("triton", C(128, 64, 32, 8, 16, 4, rot=True)),
        ("triton", C(128, 64, 128, 8, 4, 4, rot=True)),
    ],
    "m64r": [
        ("triton", LAB.DECODE[64]),
        ("triton", C(64, 64, 64, 8, 8, 4, rot=True)),
    ],
    "m16r": [
        ("triton", LAB.DECODE[16]),
        ("triton", C(16, 64, 128, 8, 4, 4, rot=True)),
        ("triton", C(16, 64, 64, 8, 8, 4)),
        ("triton", C(16, 64, 64, 8, 8, 4, rot=True)),
    ],
    # fourth round (session 6, call 6): the persistent kernel at 2 programs per SM (128x128
    # tiles, 95-157 registers, 96-112 KB of shared memory each: one program's epilogue and
    # pipeline fill overlap the other's main loop)
    "p2_4096": [
        ("persistent", LAB.PERSISTENT_LARGE["short"]),
        ("persistent", C(128, 128, 64, 8, 3, 8, 2, per_sm=2)),
        ("persistent", C(128, 128, 64, 8, 2, 8, 1, per_sm=2)),
        ("persistent", C(128, 128, 64, 8, 3, 4, 2, per_sm=2)),
        ("persistent", C(128, 128, 64, 8, 4, 8, 1)),
    ],
    "p2_up": [
        ("persistent", LAB.PERSISTENT_LARGE["large"]),
        ("persistent", C(128, 128, 64, 8, 3, 8, 2, per_sm=2)),
        ("persistent", C(128, 128, 64, 8, 3, 4, 2, per_sm=2)),
    ],
}
SHAPES = {
    "p2_4096": (4096, 4096, 4096),
    "p2_up": (4096, 14336, 4096),
    "m128r": (128, 8192, 8192),
    "m64r": (64, 8192, 8192),
    "m16r": (16, 8192, 8192),
    "m128b": (128, 8192, 8192),
    "m32b": (32, 8192, 8192),
    "m128": (128, 8192, 8192),
    "4096": (4096, 4096, 4096),
    "m64": (64, 8192, 8192),
    "m32": (32, 8192, 8192),
}
# CPU: small enough for the interpreter, large enough that every split owns K tiles
DRY_SHAPES = {"m128": (128, 256, 512), "4096": (256, 256, 128), "m64": (64, 256, 512),
              "m32": (32, 256, 512), "m128b": (128, 256, 512), "m32b": (32, 256, 512),
              "m128r": (128, 256, 512), "m64r": (64, 256, 512), "m16r": (16, 256, 512),
              "p2_4096": (256, 256, 128), "p2_up": (256, 512, 128)}  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--budget", "--budget-s", dest="budget_s", type=float, default=150.0)
    ap.add_argument("--dry-run", action="store_true", help="CPU interpreter, tiny shapes")
    ap.add_argument("--only", choices=list(CANDIDATES), action="append", help="shape classes")
    args = ap.parse_args()
    if args.dry_run and os.environ.get("TRITON_INTERPRET") != "1":
        sys.exit("--dry-run runs the kernels in Triton's interpreter: set TRITON_INTERPRET=1")
    args.out.mkdir(parents=True, exist_ok=True)
    p = p4.Probe(args)
    t0 = time.monotonic()
    for cls in args.only or ["m128", "4096", "m64", "m32"]:  # the first round
        shape = (DRY_SHAPES if args.dry_run else SHAPES)[cls]
        p.run_class(cls, shape, CANDIDATES[cls])
    summ = p4.summary(p)
    for name, fields, rows in (
        ("probe_matmul6.csv", p4.FIELDS, p.rows),
        ("probe_matmul6_summary.csv", p4.SUMMARY_FIELDS, summ),
    ):
        with (args.out / name).open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
            writer.writeheader()
            writer.writerows(rows)
    print(f"\nwrote {args.out}/probe_matmul6*.csv in {time.monotonic() - t0:.0f} s")
    print("\n".join(p4.table(p.rows, summ)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
