"""Session 15 probe 13 (issue 33): what NVIDIA's rules and ncu's injection cost in the GPT's
counter pass, and whether the rules can be applied to a report after the run. On the H200:

    PYTHONPATH=. python3 jobs/probe_s15/rules.py --out $OUT

The stored GPT run's gate under ncu as the counter pass runs it (profile's metrics and sections),
with the rules (as now), with --apply-rules no, and with a kernel filter that matches nothing
(ncu's injection and start alone); the program alone between them. Then ncu in import mode on the
rule-less report: --apply-rules yes with the details page as CSV, and as a new report.
"""

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

from profkit.counters.metrics import PROFILE_METRICS, PROFILE_SECTIONS
from profkit.counters.ncu_rep import import_ncu_report
from profkit.workload.program import child_environ

PASSES = re.compile(r"==PROF== Profiling .* - (\d+) pass")


def run(argv, env=None, timeout=400, keep=None):
    t = time.perf_counter()
    p = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout)
    wall = time.perf_counter() - t
    out = p.stdout + p.stderr
    if keep:
        Path(keep).write_text(out)
    return {
        "rc": p.returncode,
        "wall_s": round(wall, 3),
        "passes": sum(int(x) for x in PASSES.findall(out)),
        "out_bytes": len(out),
        "tail": out[-500:] if p.returncode or not PASSES.findall(out) else "",
    }


def rules_of(report):
    if not Path(report).exists():
        return None
    lib = import_ncu_report()
    ctx = lib.load_report(report)
    out = []
    for r in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r)
        for a in range(rng.num_actions()):
            act = rng.action_by_idx(a)
            for res in act.rule_results():
                msg = res.rule_message() if res.has_rule_message() else {}
                out.append(
                    [
                        a,
                        res.rule_identifier(),
                        str(msg.get("title", ""))[:60],
                        str(msg.get("message", ""))[:80],
                    ]
                )
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    out = Path(ap.parse_args().out)
    run_dir = sorted(Path("tests/data/workloads").glob("gpt_train-*"))[-1]
    c = json.loads((run_dir / "manifest.json").read_text())["counters"]
    gate = Path("/tmp/probe_gate.json")
    gate.write_text((run_dir / "gate.json").read_text())
    names = "|".join(re.escape(n) for n in c["kernel_names"])
    program = ["examples/gpt_train.py", "--steps", "20", "--last", "10"]
    child = [
        sys.executable,
        "-m",
        "profkit.workload.child",
        "--no-profile",
        "--gate",
        str(gate),
        "--",
        *program,
    ]

    def ncu(report, pattern=names, extra=()):
        return [
            "ncu",
            "--replay-mode",
            "kernel",
            "--clock-control",
            "none",
            "--cache-control",
            "all",
            "--metrics",
            ",".join(PROFILE_METRICS),
            *[x for s in PROFILE_SECTIONS for x in ("--section", s)],
            "--profile-from-start",
            "off",
            "--nvtx",
            "--kernel-name-base",
            "function",
            "--kernel-name",
            f"regex:^(?:{pattern})$",
            "--launch-count",
            str(c["launch_count"]),
            *extra,
            "-f",
            "-o",
            report,
            *child,
        ]

    res = {}
    (out / "ncu-help.txt").write_text(
        subprocess.run(["ncu", "--version"], capture_output=True, text=True).stdout
        + subprocess.run(["ncu", "--help"], capture_output=True, text=True).stdout
    )
    with child_environ():
        import os

        env = dict(os.environ)
        plan = [
            ("alone#0", [sys.executable, *program]),
            ("rules#0", ncu("/tmp/p13_rules0")),
            ("norules#0", ncu("/tmp/p13_norules0", extra=("--apply-rules", "no"))),
            ("alone#1", [sys.executable, *program]),
            ("nomatch#0", ncu("/tmp/p13_nomatch", pattern="profkit_matches_nothing")),
            ("rules#1", ncu("/tmp/p13_rules1")),
            ("norules#1", ncu("/tmp/p13_norules1", extra=("--apply-rules", "no"))),
            ("alone#2", [sys.executable, *program]),
        ]
        for name, argv in plan:
            res[name] = run(argv, env)
            (out / "probe13.json").write_text(json.dumps(res, indent=1))
    rep, full = "/tmp/p13_norules0.ncu-rep", "/tmp/p13_rules0.ncu-rep"
    res["import_csv_rules"] = run(
        [
            "ncu",
            "-i",
            rep,
            "--apply-rules",
            "yes",
            "--page",
            "details",
            "--csv",
            "--print-details",
            "all",
        ],
        keep=out / "offline.csv",
    )
    res["import_csv_plain"] = run(
        ["ncu", "-i", full, "--page", "details", "--csv", "--print-details", "all"],
        keep=out / "inpass.csv",
    )
    res["import_text_rules"] = run(
        ["ncu", "-i", rep, "--apply-rules", "yes", "--page", "details"], keep="/tmp/p13_offline.txt"
    )
    res["import_export"] = run(
        ["ncu", "-i", rep, "--apply-rules", "yes", "--export", "/tmp/p13_applied", "-f"]
    )
    res["import_o"] = run(
        ["ncu", "-i", rep, "--apply-rules", "yes", "-o", "/tmp/p13_applied2", "-f"]
    )
    for key, path in (
        ("rules_in_pass", full),
        ("rules_norules", rep),
        ("rules_export", "/tmp/p13_applied.ncu-rep"),
        ("rules_o", "/tmp/p13_applied2.ncu-rep"),
    ):
        try:
            res[key] = rules_of(path)
        except Exception as exc:  # a probe: keep what failed
            res[key] = f"error: {exc}"
    (out / "probe13.json").write_text(json.dumps(res, indent=1))
    txt = Path("/tmp/p13_offline.txt").read_text()
    print("offline text: OPT lines", txt.count("OPT "), "WRN lines", txt.count("WRN "))
    for k, v in res.items():
        if isinstance(v, dict):
            print(
                f"{k:20s} {v['wall_s']:7.2f} s rc {v['rc']} passes {v['passes']} "
                f"out {v['out_bytes']} {v['tail'][-160:]!r}"
            )
        else:
            print(f"{k:20s} {v if not isinstance(v, list) else len(v)}")


if __name__ == "__main__":
    main()
