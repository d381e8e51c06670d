"""Probe the persistent, pipelined split-row softmax ("rowsplit_pipe": the next round's chunk
loads in flight while this round's exchange waits) at the long-row shapes, beside the shipped
config, torch.softmax and a same-size device copy (issue 10, session 6b).

    PYTHONPATH=/tmp/site:$PWD python3 bench/probe_softmax7.py --out DIR [--budget 100]
    PYTHONPATH=$PWD python3 bench/probe_softmax7.py --out DIR --dry-run   # CPU interpreter
    PYTHONPATH=$PWD python3 bench/probe_softmax7.py --out DIR --sm90      # offline registers

Every implementation is checked against the float64 reference on fresh inputs first (the first
test of the persistent grid's one-launch wait); a wrong or crashing one is recorded (correct=False,
error) and never timed. Device time: CUDA-graph replay with the L2 flushed before each call
(profkit.devicetime, ~0.3 s per timing); a replay is a call (the counters count generations).
No torch.compile. Once --budget seconds have passed, what is left is recorded as skipped.
--dry-run: 3 rows of each length through Triton's interpreter, checks only (rowsplit paths run as
two launches there, MODE 1 + 2; P covers the items in 2 rounds).

Writes DIR/probe_softmax7.csv (one row per case x implementation; p50_us device time, pct_copy
the bandwidth over a same-size copy's, vs_cur the time over the shipped config's, programs the
persistent grid P) and prints two tables last: microseconds, and % of copy. Columns: cur (shipped
launch_config), p{chunk}kw{warps} (rowsplit_pipe, next chunk loaded before the exchange), suffix
L = loaded after the arrival atomic instead, m = one resident program per SM held back from P
(env spelling m1). dtypes print as fp16 / bf16 / fp32.
"""

from __future__ import annotations

import ast
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from probe_softmax4 import sweep_main  # noqa: E402

CASES = (
    [(d, s) for s in ((1024, 32768), (256, 65536)) for d in ("float16", "bfloat16", "float32")]
    + [(d, (4096, 16384)) for d in ("float16", "bfloat16")]
    + [("float16", (16384, 8192))]
)
# CHUNKxWARPS[L][m1] per item size; PROBE_PIPE16 / PROBE_PIPE32="8192x8,4096x4L" replace them
DEFAULT = {
    2: "8192x8,8192x4,4096x4,8192x8L,4096x4L,8192x8m1",
    4: "8192x4,4096x4,8192x4L,4096x4L,4096x4m1",
}


def _configs(itemsize: int) -> list[tuple[str, int, int, bool, int]]:
    """(name, chunk, warps, late, margin)"""
    out = []
    for item in os.environ.get(f"PROBE_PIPE{8 * itemsize}", DEFAULT[itemsize]).split(","):
        margin = 1 if item.endswith("m1") else 0
        core = item.removesuffix("m1")
        late = core.endswith("L")
        chunk, warps = (int(v) for v in core.removesuffix("L").split("x"))
        name = f"p{chunk // 1024}kw{warps}" + ("L" if late else "") + ("m" if margin else "")
        out.append((name, chunk, warps, late, margin))
    return out


COLUMNS = ["cur", *dict.fromkeys(c[0] for i in (2, 4) for c in _configs(i))]


def candidates(shape, itemsize: int) -> list[tuple[str, tuple]]:
    """(name, softmax_triton config) beyond the shipped launch_config."""
    rows, cols = shape
    out = []
    for name, chunk, warps, late, margin in _configs(itemsize):
        if cols <= 8192 and (late or margin or warps == 4 and chunk == 8192):
            continue  # the control (no exchange in the rows path): the two plain shapes only
        splits = 1 << (-(-cols // chunk) - 1).bit_length()
        out.append((name, ("rowsplit_pipe", chunk, splits, warps, late, margin)))
    return out


def sm90(lab) -> None:
    kernel = lab._softmax_rowsplit_pipe_kernel
    sm90_table(lab, candidates, kernel, lambda dtype, cfg: {"LATE": cfg[4]})


def sm90_table(lab, candidates, kernel_fn, flags, args_of=None, stages_of=None) -> None:
    """Registers, spills, shared memory and resident programs per SM of a persistent split-row
    kernel's candidates (flags(dtype, cfg): the kernel's own constexprs for a candidate;
    args_of(dtype, cfg): its runtime arguments' types where they are not pointers X, Y;
    stages_of(cfg): the num_stages option, default 3)."""
    from sm90_compile import PTR, compile_sm90, usage

    print(f"{'dtype':9} {'shape':11} {'candidate':10} regs spill smem blocks/SM")
    seen = set()
    for dtype, shape in CASES:
        isz = 2 if dtype != "float32" else 4
        for name, cfg in candidates(shape, isz):
            key = (dtype, cfg[1:])
            if key in seen:
                continue
            seen.add(key)
            if args_of:
                args = args_of(dtype, cfg)
            else:
                args = {"X": PTR[dtype], "Y": PTR[dtype], "STATS": "*fp32", "COUNT": "*i32"}
                args |= {"n_rows": "i32", "n_cols": "i32", "stride_x": "i32", "stride_y": "i32"}
            const = {"BLOCK": cfg[1], "S": cfg[2], "MODE": 0, **flags(dtype, cfg)}
            const |= {"MAX_SPINS": 1 << 16}
            stages = stages_of(cfg) if stages_of else 3
            try:
                kernel = compile_sm90(kernel_fn, args, const, cfg[3], stages)
                regs, spill = usage(kernel)
            except Exception as exc:  # a row, not an abort
                print(f"{dtype:9} {'x'.join(map(str, shape)):11} {name:10} {exc}"[:100])
                continue
            kernel.n_regs = regs  # what the host's P arithmetic reads from a loaded kernel
            per_sm = lab._resident_per_sm(kernel, cfg[3])  # no driver here: the arithmetic
            smem = kernel.metadata.shared
            line = f"{dtype:9} {'x'.join(map(str, shape)):11} {name:10} {regs:4} {spill:5}"
            print(f"{line} {smem:5} {per_sm}")


def report(df, elapsed: float, columns: list[str] | None = None) -> None:
    columns = columns or COLUMNS
    bad = df[df.correct == False]  # noqa: E712
    for r in bad.itertuples():
        print(f"FAILED {r.dtype} {r.shape} {r.impl}: {r.error}"[:100])
    skipped = int((df.error == "skipped (budget)").sum())
    print(f"{len(df)} rows, {len(bad)} failed, {skipped} skipped, {elapsed:.0f}s")
    short = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32"}
    for title, col in (("device us", "p50_us"), ("% of copy", "pct_copy")):
        head = f"{'dtyp':4} {'shape':10} {'copy':>6}"
        print(f"{title}\n{head}" + "".join(f"{c[:6]:>7}" for c in ["torch", *columns]))
        for (dtype, shape), g in df.groupby(["dtype", "shape"], sort=False):
            by = g.set_index("impl")[col]
            line = f"{short[dtype]:4} {shape:10} {g.copy_us.iloc[0]:6.1f}"
            for c in ("torch", *columns):
                v = by.get(c, float("nan"))
                line += f"{v:7.1f}" if v == v else f"{'-':>7}"
            print(line)


def programs_column(kernel_name: str, path: str):
    """A sweep hook adding `programs`: the persistent grid P each candidate of `path` ran with
    (cached by softmax_triton's first call, keyed (kernel, device, rows, cols, dtype, chunk,
    splits, warps, flags..., margin); a config is (path, chunk, splits, warps, flags...))."""

    def programs(lab, row) -> int | None:
        if not row["config"].startswith(f"('{path}'"):
            return None
        cfg = ast.literal_eval(row["config"])
        rows, cols = (int(v) for v in row["shape"].split("x"))
        for key, p in lab._PIPE_PROGRAMS.items():
            if key[0] == kernel_name and key[2:4] == (rows, cols):
                same = key[5:8] == cfg[1:4] and key[8 : 8 + len(cfg) - 4] == cfg[4:]
                if str(key[4]).endswith(row["dtype"]) and same:
                    return p
        return None

    def add(run, df) -> None:
        df["programs"] = [programs(run.lab, r) for r in df.to_dict("records")]

    return add


def main() -> None:
    add = programs_column("_softmax_rowsplit_pipe_kernel", "rowsplit_pipe")
    sweep_main(__doc__, 100.0, "probe_softmax7.csv", CASES, candidates, report, sm90, add)


if __name__ == "__main__":
    main()
