"""Check the counter pass's gate on a program (issue 33): the aten op calls profkit numbers from the
timing pass's trace (counter_pass.visible_calls) against the calls a dispatch mode sees, as the
gate's child counts them, over the first measured step.

    python3 jobs/gate_check.py --step-range step --skip 1 -- python3 SCRIPT.py ARGS

Compares, per op name, how many calls of it each numbers: every name whose calls hold a kernel
launch in the trace (on a CPU, every name but those that never launch one: autograd's own
detaches, which the trace does not record, and factories). Prints the names that differ and the
first differences of the two sequences, and exits 1 when any name differs.
"""

from __future__ import annotations

import argparse
import difflib
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

from profkit.workload import child, counter_pass, timing_pass
from profkit.workload.program import child_env, parse_program
from profkit.workload.trace import call_key

IGNORED = {"aten::detach", "aten::empty", "aten::lift_fresh"}


def from_trace(export: dict, step_range: str, skip: int) -> tuple[list[tuple[str, int]], set]:
    """The visible calls of the first measured step, numbered per name, and the names of those
    that hold a kernel launch there."""
    ops = timing_pass.op_calls(export)
    _, ranges = timing_pass.frames(export)
    opens = ranges[ranges["name"] == step_range].sort_values("start_us")["start_us"].tolist()
    lo, hi = opens[skip], opens[skip + 1] if skip + 1 < len(opens) else float("inf")
    seen = counter_pass.visible_calls(ops, counter_pass.is_composite)
    calls = ops[seen & (ops["start_us"] >= lo)].sort_values("start_us")
    calls = calls.assign(key=calls["name"].map(call_key))
    calls = calls.assign(n=calls.groupby("key").cumcount())
    calls = calls[calls["start_us"] < hi]
    acts, _ = timing_pass.frames(export)
    held = {i for chain in acts["op_ids"] if isinstance(chain, list) for i in chain}
    launching = set(calls.loc[calls.index.isin(held), "key"])
    return [(k, int(n)) for k, n in zip(calls["key"], calls["n"], strict=True)], launching


def from_mode(program: list[str], step_range: str, skip: int) -> list[tuple[str, int]]:
    from torch.utils._python_dispatch import TorchDispatchMode

    seen: list[tuple[str, int]] = []
    counts: dict[str, int] = {}
    opens = [0]

    def opened(name: str) -> str:
        opens[0] += name == step_range
        return name

    child._hook_ranges(opened, lambda _: None, record_functions=True)

    class Record(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            name = func._schema.name
            if opens[0] == skip + 1 and name.startswith("aten::"):
                key = call_key(name)
                seen.append((key, counts.get(key, 0)))
                counts[key] = counts.get(key, 0) + 1
            return func(*args, **(kwargs or {}))

    with Record():
        child._run(program)
    return seen


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--step-range", default="step")
    p.add_argument("--skip", type=int, default=1, help="steps before the first measured one")
    p.add_argument("command", nargs=argparse.REMAINDER)
    args = p.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    program = parse_program(command)
    with tempfile.TemporaryDirectory(prefix="profkit-gate-") as tmp:
        export_path = Path(tmp) / "timing.json.gz"
        subprocess.run(program.child_argv(export_path), env=child_env(), check=True)
        trace, launching = from_trace(
            timing_pass.read_export(export_path), args.step_range, args.skip
        )
    target = [program.target] if not program.module else ["-m", program.target]
    mode = from_mode([*target, *program.args], args.step_range, args.skip)
    names = launching or {k for k, _ in trace + mode} - IGNORED
    a = [c for c in trace if c[0] in names]
    b = [c for c in mode if c[0] in names]
    count_a, count_b = Counter(k for k, _ in a), Counter(k for k, _ in b)
    differ = sorted(k for k in names if count_a[k] != count_b[k])
    same = not differ
    print(f"{'PASS' if same else 'FAIL'} gate numbering: {len(a)} calls of {len(names)} ops "
          f"({'launching kernels' if launching else 'all'}) in the trace's first measured step, "
          f"{len(b)} seen by the dispatch mode"
          + (f"; counts differ for {', '.join(differ)}" if differ else ""))  # fmt: skip
    for line in list(difflib.unified_diff(list(map(str, a)), list(map(str, b)), lineterm=""))[:40]:
        print("  " + line)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
