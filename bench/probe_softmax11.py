"""Probe the tagged-words split-row softmax with its wait in PTX ("rowsplit_tag", ASM: thread 0
polls the row's 2S tagged words with loads issued together, a named barrier releases the block;
no fence, no atomic) at the long-row shapes, beside the shipped config, torch.softmax and a
same-size device copy (issue 10, session 7c).

    PYTHONPATH=/tmp/site:$PWD python3 bench/probe_softmax11.py --out DIR [--budget 100]
    PYTHONPATH=$PWD python3 bench/probe_softmax11.py --out DIR --dry-run   # CPU interpreter

Method as bench/probe_softmax7.py (its Session, cases and tables): each implementation checked
against float64 first, never timed when wrong; device time by CUDA-graph replay, L2 flushed.
Columns a{chunk in K}w{warps}[e]: ASM wait; e = exp(x - m) held in x's 16-bit type (KEEP
"e16"); s6{...} the same without ASM (session 6's form). Writes DIR/probe_softmax11.csv.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from probe_softmax4 import sweep_main  # noqa: E402
from probe_softmax7 import CASES, report  # noqa: E402

# (chunk, warps, keep, asm) per item size
CONFIGS = {
    2: [(8192, 8, False, True), (8192, 8, "e16", True), (4096, 4, "e16", True)]
    + [(8192, 16, "e16", True), (8192, 8, "e16", False)],
    4: [(8192, 4, False, True), (4096, 4, False, True), (8192, 8, False, True)],
}


def _name(chunk: int, warps: int, keep, asm: bool) -> str:
    name = f"{chunk // 1024}kw{warps}" + ("e" if keep == "e16" else "")
    return ("a" if asm else "s6") + name


COLUMNS = ["cur", *dict.fromkeys(_name(*c) for i in (2, 4) for c in CONFIGS[i])]


def candidates(shape, itemsize: int) -> list[tuple[str, tuple]]:
    rows, cols = shape
    out = []
    for chunk, warps, keep, asm in CONFIGS[itemsize]:
        splits = 1 << (-(-cols // chunk) - 1).bit_length()
        if splits > 8:
            continue  # the ASM wait reads at most 16 words
        out.append(
            (_name(chunk, warps, keep, asm), ("rowsplit_tag", chunk, splits, warps, keep, asm))
        )
    return out


def _report(df, seconds: float) -> None:
    report(df, seconds, COLUMNS)


def main() -> None:
    sweep_main(__doc__, 100.0, "probe_softmax11.csv", CASES, candidates, _report)


if __name__ == "__main__":
    main()
