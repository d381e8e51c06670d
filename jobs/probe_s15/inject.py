"""Session 15 probe 14 (issue 33): where ncu's ~4 s on the GPT's unprofiled part go, and what the
rules cost when only the ones the profile's sections fire are applied. On the H200:

    PYTHONPATH=. python3 jobs/probe_s15/inject.py --out $OUT

phases.py (gpt_train with phase marks) alone and under ncu with the counter pass's options and a
kernel filter that matches nothing, varied one option at a time; then the real counter pass (the
stored run's gate) with all rules and with --rule for the four that fire.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from profkit.counters.metrics import PROFILE_METRICS, PROFILE_SECTIONS
from profkit.workload.program import child_environ

PASSES = re.compile(r"==PROF== Profiling .* - (\d+) pass")
MARK = re.compile(r"^P14 (\S+) ([0-9.]+)$", re.M)
RULES = ("SOLBottleneck", "TheoreticalOccupancy", "LaunchConfiguration", "AchievedOccupancy")


def run(argv, env, timeout=400):
    env = {**env, "P14_T0": repr(time.time())}
    t = time.perf_counter()
    p = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout)
    wall = time.perf_counter() - t
    out = p.stdout + p.stderr
    return {
        "rc": p.returncode,
        "wall_s": round(wall, 3),
        "passes": sum(int(x) for x in PASSES.findall(out)),
        "marks": {k: float(v) for k, v in MARK.findall(out)},
        "tail": out[-400:] if p.returncode else "",
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    out = Path(ap.parse_args().out)
    run_dir = sorted(Path("tests/data/workloads").glob("gpt_train-*"))[-1]
    c = json.loads((run_dir / "manifest.json").read_text())["counters"]
    gate = Path("/tmp/probe_gate.json")
    gate.write_text((run_dir / "gate.json").read_text())
    names = "|".join(re.escape(n) for n in c["kernel_names"])
    phases = [sys.executable, "jobs/probe_s15/phases.py"]
    child = [
        sys.executable,
        "-m",
        "profkit.workload.child",
        "--no-profile",
        "--gate",
        str(gate),
        "--",
        "examples/gpt_train.py",
        "--steps",
        "20",
        "--last",
        "10",
    ]

    def ncu(
        program,
        pattern=names,
        metrics=PROFILE_METRICS,
        sections=PROFILE_SECTIONS,
        nvtx=True,
        extra=(),
    ):
        return [
            "ncu",
            "--replay-mode",
            "kernel",
            "--clock-control",
            "none",
            "--cache-control",
            "all",
            "--metrics",
            ",".join(metrics),
            *[x for s in sections for x in ("--section", s)],
            "--profile-from-start",
            "off",
            *(["--nvtx"] if nvtx else []),
            "--kernel-name-base",
            "function",
            "--kernel-name",
            f"regex:^(?:{pattern})$",
            "--launch-count",
            str(c["launch_count"]),
            *extra,
            "-f",
            "-o",
            "/tmp/p14",
            *program,
        ]

    none = "profkit_matches_nothing"
    rules = [x for r in RULES for x in ("--rule", r)]
    res = {}
    listing = subprocess.run(["ncu", "--list-rules"], capture_output=True, text=True).stdout
    folder = Path(subprocess.run(["which", "ncu"], capture_output=True, text=True).stdout.strip())
    secs = []
    for py in sorted(folder.resolve().parent.glob("sections/*.py")):
        found = re.findall(r"get_section_identifier\(\):\s*return\s*\"(\w+)\"", py.read_text())
        secs.append(f"{py.stem}: {found}")
    (out / "rules-list.txt").write_text(listing + "\n# rule file: section\n" + "\n".join(secs))
    with child_environ():
        env = dict(os.environ)
        plan = [
            ("alone#0", phases, env),
            ("alone#1", phases, env),
            ("nomatch#0", ncu(phases, none), env),
            ("nomatch_lazy", ncu(phases, none), {**env, "CUDA_MODULE_LOADING": "LAZY"}),
            ("nomatch_nonvtx", ncu(phases, none, nvtx=False), env),
            ("nomatch_onemetric", ncu(phases, none, ["gpu__time_duration.sum"], ()), env),
            ("alone_eager", phases, {**env, "CUDA_MODULE_LOADING": "EAGER"}),
            ("nomatch#1", ncu(phases, none), env),
            ("gate_allrules", ncu(child), env),
            ("gate_4rules", ncu(child, extra=rules), env),
            ("alone#2", phases, env),
            ("gate_allrules#1", ncu(child), env),
            ("gate_4rules#1", ncu(child, extra=rules), env),
        ]
        for name, argv, e in plan:
            res[name] = run(argv, e)
            (out / "probe14.json").write_text(json.dumps(res, indent=1))
    keys = ["python", "import_torch", "cuda_ctx", "import_prog", "step1", "step2", "step11", "done"]
    print(f"{'run':18s} {'wall':>6s} {'pass':>4s} " + " ".join(f"{k[:8]:>8s}" for k in keys))
    for name, r in res.items():
        m = r["marks"]
        print(
            f"{name:18s} {r['wall_s']:6.2f} {r['passes']:4d} "
            + " ".join(f"{m[k]:8.2f}" if k in m else f"{'-':>8s}" for k in keys)
            + (f" rc {r['rc']} {r['tail'][-200:]!r}" if r["rc"] else "")
        )


if __name__ == "__main__":
    main()
