"""Probe the generation-tagged rowsplit softmax ("rowsplit_tag": one L2 round trip in the
exchange instead of the counter's ~3) at the long-row shapes, beside the shipped config,
torch.softmax and a same-size device copy (issue 10, session 6).

    PYTHONPATH=/tmp/site:$PWD python3 bench/probe_softmax6.py --out DIR [--budget 120]
    PYTHONPATH=$PWD python3 bench/probe_softmax6.py --out DIR --dry-run   # CPU interpreter
    PYTHONPATH=$PWD python3 bench/probe_softmax6.py --out DIR --sm90      # offline registers

Every implementation is checked against the float64 reference on fresh inputs first (that check
is the first test of the one-launch spin-wait with S > 1); a wrong or crashing one is recorded
(correct=False, error) and never timed. Device time: CUDA-graph replay with the L2 flushed
before each call (profkit.devicetime, ~0.3 s per timing), so a replay is a call: the tagged
words advance one generation per replay with no reset launch. No torch.compile (earlier sessions
measured it; its compiles would eat the budget). Once --budget seconds have passed, what is left
is recorded as skipped. --dry-run: 3 rows of each length through Triton's interpreter, checks
only (rowsplit paths run as two launches there, MODE 1 + 2).

Writes DIR/probe_softmax6.csv (one row per case x implementation; p50_us device time, pct_copy
the bandwidth over a same-size copy's, vs_cur the time over the shipped config's; summarize() of
probe_softmax4) and prints two tables last: microseconds, and % of copy. Columns: cur (shipped
launch_config), t{chunk}w{warps} (rowsplit_tag, x kept as fp32 exp in registers), suffix n =
NARROW (x kept 16-bit, exp recomputed at the end).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from probe_softmax4 import sweep_main  # noqa: E402
from probe_softmax7 import report  # noqa: E402

CASES = (
    [(d, s) for s in ((1024, 32768), (256, 65536)) for d in ("float16", "bfloat16", "float32")]
    + [(d, (4096, 16384)) for d in ("float16", "bfloat16")]
    + [("float16", (16384, 8192))]
)
# CHUNKxWARPS[n|e] per item size (n: NARROW, e: E16, 16-bit only); PROBE_TAG16 / PROBE_TAG32
# ="8192x8,4096x4e" replace them
# (NARROW is not a default: offline it holds more registers than fp32 e, and 8192x8n spills)
DEFAULT = {2: "8192x8,8192x8e,8192x16,8192x16e,4096x4e", 4: "8192x4,4096x4,8192x8"}
KEEP = {"": False, "n": True, "e": "e16"}


def _configs(itemsize: int) -> list[tuple[int, int, bool | str]]:
    spec = os.environ.get(f"PROBE_TAG{8 * itemsize}", DEFAULT[itemsize])
    out = []
    for item in spec.split(","):
        chunk, warps = item.rstrip("ne").split("x")
        out.append((int(chunk), int(warps), KEEP[item[-1] if item[-1] in "ne" else ""]))
    return out


def _name(chunk: int, warps: int, keep) -> str:
    return f"{chunk // 1024}kw{warps}" + {False: "", True: "n", "e16": "e"}[keep]


COLUMNS = ["cur", *dict.fromkeys(_name(*c) for i in (2, 4) for c in _configs(i))]


def candidates(shape, itemsize: int) -> list[tuple[str, tuple]]:
    """(name, softmax_triton config) beyond the shipped launch_config."""
    rows, cols = shape
    out = []
    for chunk, warps, keep in _configs(itemsize):
        keep = keep if itemsize == 2 else False  # E16 / NARROW are 16-bit forms
        splits = 1 << (-(-cols // chunk) - 1).bit_length()
        if cols <= 8192 and chunk != 4096:  # the control: one candidate, 2 x 4096
            continue
        if splits >= 2:
            out.append((_name(chunk, warps, keep), ("rowsplit_tag", chunk, splits, warps, keep)))
    return out


def sm90(lab) -> None:
    from sm90_compile import PTR, REGS_PER_SM, compile_sm90, usage

    print(f"{'dtype':9} {'shape':11} {'candidate':12} regs spill blocks/SM")
    for dtype, shape in CASES:
        isz = 2 if dtype != "float32" else 4
        for name, cfg in candidates(shape, isz):
            args = {"X": PTR[dtype], "Y": PTR[dtype], "SLOTS": "*i64", "n_cols": "i32"}
            args |= {"stride_x": "i32", "stride_y": "i32"}
            const = {"BLOCK": cfg[1], "S": cfg[2], "MODE": 0, "NARROW": cfg[4] is True}
            const |= {"E16": cfg[4] == "e16", "MAX_SPINS": 1 << 16}
            try:
                kernel = compile_sm90(lab._softmax_rowsplit_tag_kernel, args, const, cfg[3])
                regs, spill = usage(kernel)
            except Exception as exc:  # a row, not an abort
                print(f"{dtype:9} {'x'.join(map(str, shape)):11} {name:12} {exc}"[:100])
                continue
            # registers are allocated per thread in multiples of 8; 64 warps per SM at most
            per_sm = min(64 // cfg[3], REGS_PER_SM // (-(-regs // 8) * 8 * 32 * cfg[3]))
            print(f"{dtype:9} {'x'.join(map(str, shape)):11} {name:12} {regs:4} {spill:5} {per_sm}")


def _report(df, seconds: float) -> None:
    report(df, seconds, COLUMNS)


def main() -> None:
    sweep_main(__doc__, 120.0, "probe_softmax6.csv", CASES, candidates, _report, sm90)


if __name__ == "__main__":
    main()
