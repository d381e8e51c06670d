"""What explain concludes on each captured zoo case, next to zoo/EXPECTED, one line per case:

    python3 zoo/summary.py RUNS_DIR [OUT_DIR]

RUNS_DIR holds zoo runs (a capture's profiles/, or tests/data/zoo); the newest run per kernel is
read. Each line: ok or MISS (against EXPECTED; tests/test_zoo.py is the authority), the case, and
explain's bottleneck, unit, first three causes and first two steps; a MISS line adds what was
expected. With OUT_DIR, each run's explain JSON is written there too. Exits 0 whatever it finds.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

from profkit import store
from profkit.explain import FindingKind, explain_run
from profkit.explain.as_json import finding_dict

EXPECTED = Path(__file__).with_name("EXPECTED")


def _firsts(e: dict) -> list[str]:
    first = e.get("first_step", [])
    return [first] if isinstance(first, str) else list(first)


def misses(e: dict, f, found) -> list[str]:
    named = {str(r.cause) for r in f.reasons}
    steps = [str(s.action) for s in f.next]
    out = []
    if e.get("bottleneck") not in (None, str(f.bottleneck)):
        out.append(f"bottleneck {e['bottleneck']}")
    if e.get("unit") not in (None, str(f.unit)):
        out.append(f"unit {e['unit']}")
    if not set(e.get("causes", [])) <= named:
        out.append(f"causes {e['causes']}")
    if _firsts(e) and (not steps or steps[0] not in _firsts(e)):
        out.append(f"first {'|'.join(_firsts(e))}")
    if set(e.get("not_causes", [])) & named:
        out.append(f"not {sorted(set(e['not_causes']) & named)}")
    if set(e.get("not_steps", [])) & set(steps):
        out.append(f"not {sorted(set(e['not_steps']) & set(steps))}")
    if e.get("host"):
        host = [h for h in found if h.kind == FindingKind.HOST and h.case == f.case]
        if not host or not host[0].next or str(host[0].next[0].action) != "cuda_graph":
            out.append("host-bound")
    return out


def main(runs_dir: Path, out_dir: Path | None) -> None:
    expected = ast.literal_eval(EXPECTED.read_text())
    newest = {}
    for path in store.list_runs(runs_dir, interpret=False):
        newest[json.loads((path / "manifest.json").read_text()).get("kernel")] = path
    ok = total = 0
    for kernel, path in newest.items():
        run = store.load(path)
        counters = run.manifest.get("counters") or {}
        na = counters.get("metrics_na", [])
        print(f"{run.run_id}: counters {counters.get('status')}, n/a: {na or 'none'}")
        try:
            found = list(explain_run(run, []))
        except Exception as exc:  # one run's failure is its own line
            print(f"  explain failed: {type(exc).__name__}: {exc}")
            continue
        if out_dir:
            (out_dir / f"{run.run_id}.explain.json").write_text(
                json.dumps([finding_dict(f) for f in found])
            )
        for f in found:
            if f.kind != FindingKind.CASE:
                continue
            mine = [e for e in expected if e["kernel"] == kernel and e["variant"] == f.variant
                    and e.get("dtype", "*") in ("*", f.dtype)
                    and e.get("shape", "*") in ("*", f.shape)]  # fmt: skip
            wrong = [m for e in mine for m in misses(e, f, found)]
            total += bool(mine)
            ok += bool(mine) and not wrong
            mark = "--  " if not mine else ("MISS" if wrong else "ok  ")
            causes = ",".join(str(r.cause) for r in f.reasons[:3])
            steps = ",".join(str(s.action) for s in f.next[:2])
            clock = " [throttled]" if any(str(r.cause) == "throttled" for r in f.reasons) else ""
            print(f"  {mark} {f.variant:13} {f.shape:16} {str(f.bottleneck):8} {str(f.unit):7} "
                  f"{causes:42} -> {steps}{clock}")  # fmt: skip
            if wrong:
                print(f"        expected: {'; '.join(wrong)}")
                unjudged = getattr(f, "not_measured", [])
                if unjudged:
                    print(f"        not measured: {', '.join(map(str, unjudged))}")
    print(f"zoo: {ok} of {total} expected cases met (tests/test_zoo.py is the authority)")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: python3 zoo/summary.py RUNS_DIR [OUT_DIR]")
    main(Path(sys.argv[1]), Path(sys.argv[2]) if len(sys.argv) > 2 else None)
