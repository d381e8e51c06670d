"""How explain's findings on the hold-out meet holdout/EXPECTED: the checker tests/test_holdout.py
uses, and a summary of captured runs, one line per expectation:

    python3 holdout/check.py RUNS_DIR [REPORT.ncu-rep[.xz]] [OUT_DIR]

RUNS_DIR holds hold-out runs (a capture's $RUNS, or tests/data/holdout); the newest run per
kernel is read. REPORT is the bare raw_sgemm report. With OUT_DIR, each run's (and the report's)
explain JSON is written there. Exits 0 whatever it finds: the tests are the authority.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

from profkit.explain import FindingKind
from profkit.explain.kernel_family import LIBRARY

EXPECTED = Path(__file__).with_name("EXPECTED")
# next steps that change a kernel's own code: library code (ATen, cuBLAS, flash attention, Liger)
# gets another backend, option or formulation instead (the developers' guide)
CODE_STEPS = frozenset({
    "feed_tensor", "deeper_pipeline", "raise_occupancy", "more_programs", "whole_waves",
    "bytes_in_flight", "wider_loads", "coalesce", "pad_shared", "cut_spills", "use_tensor_cores",
    "ilp", "hide_latency", "balance_work", "uniform_branches", "fewer_barriers", "shared_pressure",
    "cut_instructions", "cheaper_math",
})  # fmt: skip


def expected() -> list[dict]:
    return ast.literal_eval(EXPECTED.read_text())


def firsts(e: dict) -> list[str]:
    first = e.get("first_step", [])
    return [first] if isinstance(first, str) else list(first)


def family_of(f) -> str | None:
    """The family of the case's kernel: its own, or its longest launch's in a multi-launch case."""
    if f.launches:
        top = max(f.launches, key=lambda launch: launch.share_pct or 0.0)
        return str(top.family)
    fam = f.evidence.get("family") if f.evidence else None
    return str(fam) if fam else None


def matches(f, e: dict) -> bool:
    return (
        e.get("variant", "*") in ("*", f.variant)
        and e.get("dtype", "*") in ("*", f.dtype)
        and e.get("shape", "*") in ("*", f.shape)
    )


def misses(e: dict, f) -> list[str]:
    """What finding f misses of expectation e (empty: it reaches the expert's conclusion)."""
    named = {str(r.cause) for r in f.reasons}
    steps = [str(s.action) for s in f.next]
    out = []
    if e.get("bottleneck") not in (None, str(f.bottleneck)):
        out.append(f"bottleneck {f.bottleneck}, expected {e['bottleneck']}")
    if e.get("unit") not in (None, str(f.unit)):
        out.append(f"unit {f.unit}, expected {e['unit']}")
    if not set(e.get("causes", [])) <= named:
        out.append(f"causes {sorted(named)} lack {sorted(set(e['causes']) - named)}")
    if firsts(e) and (not steps or steps[0] not in firsts(e)):
        out.append(f"first step {steps[:1]}, expected one of {firsts(e)}")
    if set(e.get("not_causes", [])) & named:
        out.append(f"false alarm in causes {sorted(set(e['not_causes']) & named)}")
    if set(e.get("not_steps", [])) & set(steps):
        out.append(f"false alarm in steps {sorted(set(e['not_steps']) & set(steps))}")
    if e.get("library"):
        fam = family_of(f)
        if fam not in {str(x) for x in LIBRARY}:
            out.append(f"family {fam}, not a library's")
        if CODE_STEPS & set(steps):
            out.append(f"kernel-code steps on library code {sorted(CODE_STEPS & set(steps))}")
    kind = getattr(f, "kernel_kind", None)  # issue 30, item 2: not stated by explain yet
    if e.get("kind") and kind is not None and str(kind) != e["kind"]:
        out.append(f"kind {kind}, expected {e['kind']}")
    return out


def case_findings(found, e: dict) -> list:
    if e.get("report"):  # a bare report: its longest launch
        launches = [f for f in found if f.kind == FindingKind.LAUNCH]
        key = lambda f: f.evidence.get("ncu_duration_ms") or 0.0  # noqa: E731
        return [max(launches, key=key)] if launches else []
    return [
        f for f in found if f.kind == FindingKind.CASE and f.kernel == e["kernel"] and matches(f, e)
    ]


def report_findings(path: Path) -> list:
    """explain's findings on a bare .ncu-rep (as `profkit explain REPORT` reads it)."""
    from profkit.counters.ncu_rep import read_report
    from profkit.explain import explain_launches

    rep = read_report(path)
    return list(explain_launches(rep.kernels, rep.rules))


def said(f) -> str:
    from profkit.explain.phrases import finding_text

    steps = [str(s.action) for s in f.next]
    return f"{f.subject}: {finding_text(f)} | next: {steps} | family {family_of(f)}"


def main(runs_dir: Path, report: Path | None, out_dir: Path | None) -> None:
    from profkit import store
    from profkit.explain import explain_run
    from profkit.explain.as_json import finding_dict

    found_by: dict[str, list] = {}
    for path in store.list_runs(runs_dir, interpret=False):
        run = store.load(path)
        kernel = run.manifest.get("kernel")
        if not str(kernel).startswith("ho_"):  # the zoo's runs beside them: zoo/summary.py's
            continue
        try:
            found_by[kernel] = list(explain_run(run, []))
        except Exception as exc:  # one run's failure is its own line
            print(f"{kernel}: explain failed: {type(exc).__name__}: {exc}")
            continue
        if out_dir:
            (out_dir / f"{run.run_id}.explain.json").write_text(
                json.dumps([finding_dict(f) for f in found_by[kernel]])
            )
    if report:
        found_by["raw_sgemm"] = report_findings(report)
        if out_dir:
            found = [finding_dict(f) for f in found_by["raw_sgemm"]]
            (out_dir / "raw_sgemm.explain.json").write_text(json.dumps(found))
    ok = total = 0
    for e in expected():
        key = e.get("report") or e["kernel"]
        label = f"{key}.{e.get('variant', '*')}"
        if key not in found_by:
            print(f"--   {label:28} not captured")
            continue
        total += 1
        cases = case_findings(found_by[key], e)
        wrong = [m for f in cases for m in misses(e, f)] if cases else ["no case finding"]
        ok += not wrong
        for f in cases[:1]:
            causes = ",".join(str(r.cause) for r in f.reasons[:3])
            steps = ",".join(str(s.action) for s in f.next[:2])
            print(f"{'MISS' if wrong else 'ok  '} {label:28} {str(f.bottleneck):8} "
                  f"{str(f.unit):7} {causes:40} -> {steps}")  # fmt: skip
        for w in wrong:
            print(f"        {w}")
    print(f"hold-out: {ok} of {total} captured expectations met")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: python3 holdout/check.py RUNS_DIR [REPORT.ncu-rep] [OUT_DIR]")
    args = [Path(a) for a in sys.argv[1:]]
    rep = next((a for a in args[1:] if ".ncu-rep" in a.name), None)
    rest = [a for a in args[1:] if a is not rep]
    main(args[0], rep, rest[0] if rest else None)
