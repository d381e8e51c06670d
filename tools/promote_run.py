"""Keep a captured run as a reference (tests/data/..., profkit/examples/): its tables, not its raw
report, with rules.csv xz-compressed (profkit reads it so and checks it against the manifest).

    python3 tools/promote_run.py profiles/softmax-20261202-... --to tests/data/peers
    python3 tools/promote_run.py tests/data/runs/*      # in place: compress a kept run's rules

The run is loaded first (a damaged run is refused) and again from its new place.
"""

from __future__ import annotations

import argparse
import lzma
import shutil
import sys
from pathlib import Path

from profkit import store
from profkit.errors import ProfkitError

# nothing profkit shows reads a raw report (the counter pass's, the source pass's)
LEFT_OUT = tuple(f"{r}{x}" for r in (store.REPORT, store.SOURCE_REPORT) for x in ("", ".xz"))


def promote(run: Path, dest: Path) -> Path:
    store.load(run)
    dest.mkdir(parents=True, exist_ok=True)
    for f in sorted(run.iterdir()):
        if not f.is_file() or f.name in LEFT_OUT:
            continue
        if f.name in store.COMPRESSIBLE:
            (dest / f"{f.name}.xz").write_bytes(lzma.compress(f.read_bytes(), preset=9))
            if f.parent == dest:
                f.unlink()
        elif f.parent != dest:
            shutil.copy2(f, dest / f.name)
    store.load(dest)
    return dest


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", type=Path, help="run folders")
    ap.add_argument("--to", type=Path, help="the folder to keep them under [default: in place]")
    args = ap.parse_args()
    try:
        for run in args.runs:
            print(promote(run, args.to / run.name if args.to else run))
    except ProfkitError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
