"""Session 14 probe (issue 33): which of PROFILE_METRICS cost ncu replay passes, and what the GPT's
counter pass costs without them. Run on the H200 from the checkout root:

    PYTHONPATH=. python3 jobs/probe_s14/passes.py --out $OUT/probe10.json

1. tiny.py (one launch, driver API) under ncu with the profile's metrics and sections, then with
   each metric left out and each family left out: the pass count of each set.
2. The stored GPT run's gate (tests/data/workloads/gpt_train-*/gate.json) under ncu as the counter
   pass runs it, with the full set and with each costly family left out, and the program alone.
"""

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

from profkit.counters.metrics import PROFILE_METRICS, PROFILE_SECTIONS
from profkit.workload.program import child_environ

PASSES = re.compile(r"==PROF== Profiling .* - (\d+) pass")
FAMILIES = {
    "sass": "smsp__sass_",
    "pcsamp": "smsp__pcsamp_",
    "atomic_l2": "lts__d_atomic",
    "atomic_l1": (
        "l1tex__t_requests_pipe_lsu_mem_global_op_atom",
        "l1tex__t_requests_pipe_lsu_mem_global_op_red",
    ),
    "shared": ("l1tex__data_bank_conflicts", "l1tex__data_pipe_lsu_wavefronts_mem_shared"),
    "tensor_inst": "sm__inst_executed_pipe_tensor_op_",
    "pipes": ("sm__pipe_", "sm__inst_executed_pipe_xu", "sm__inst_executed_pipe_lsu"),
    "l1_sectors": (
        "l1tex__t_sectors_pipe_lsu_mem_global",
        "l1tex__t_requests_pipe_lsu_mem_global_op_ld",
        "l1tex__t_requests_pipe_lsu_mem_global_op_st",
    ),
    "local": "l1tex__t_bytes_pipe_lsu_mem_local",
    "inst": ("smsp__inst_executed.sum", "smsp__inst_executed_op_"),
    "issue": "smsp__issue_active",
    "hit_rates": ("lts__t_sector_hit_rate", "l1tex__t_sector_hit_rate"),
    "sol": (
        "dram__throughput",
        "gpu__compute_memory_throughput",
        "sm__throughput",
        "l1tex__throughput",
        "lts__throughput",
    ),
}


def family(prefix):
    prefixes = (prefix,) if isinstance(prefix, str) else prefix
    return [m for m in PROFILE_METRICS if m.startswith(prefixes)]


def ncu_argv(metrics, sections, extra, report):
    argv = ["ncu", "--replay-mode", "kernel", "--clock-control", "none", "--cache-control", "all"]
    if metrics:
        argv += ["--metrics", ",".join(metrics)]
    for s in sections:
        argv += ["--section", s]
    return argv + list(extra) + ["-f", "-o", report]


def run(argv, env=None, timeout=300):
    t = time.perf_counter()
    p = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout)
    wall = time.perf_counter() - t
    out = p.stdout + p.stderr
    passes = [int(x) for x in PASSES.findall(out)]
    return {
        "rc": p.returncode,
        "wall_s": round(wall, 3),
        "passes": passes,
        "tail": out[-600:] if p.returncode or not passes else "",
    }


def tiny_sets(report):
    tiny = [sys.executable, "jobs/probe_s14/tiny.py"]
    alone = run(tiny)
    full = list(PROFILE_METRICS)
    rows = {"alone": alone}
    rows["full"] = run(ncu_argv(full, PROFILE_SECTIONS, [], report) + tiny)
    rows["metrics_only"] = run(ncu_argv(full, [], [], report) + tiny)
    rows["sections_only"] = run(ncu_argv([], PROFILE_SECTIONS, [], report) + tiny)
    for name, prefix in FAMILIES.items():
        drop = set(family(prefix))
        rows[f"-{name}"] = run(
            ncu_argv([m for m in full if m not in drop], PROFILE_SECTIONS, [], report) + tiny
        )
        rows[f"-{name}"]["dropped"] = sorted(drop)
    for m in full:
        rows[f"-{m}"] = run(
            ncu_argv([x for x in full if x != m], PROFILE_SECTIONS, [], report) + tiny
        )
    return rows


def gpt(report, families, rounds):
    runs = sorted(Path("tests/data/workloads").glob("gpt_train-*"))
    man = json.loads((runs[-1] / "manifest.json").read_text())
    gate = Path("/tmp/probe_gate.json")
    gate.write_text((runs[-1] / "gate.json").read_text())
    c = man["counters"]
    pattern = "|".join(re.escape(n) for n in c["kernel_names"])
    extra = [
        "--profile-from-start",
        "off",
        "--nvtx",
        "--kernel-name-base",
        "function",
        "--kernel-name",
        f"regex:^(?:{pattern})$",
        "--launch-count",
        str(c["launch_count"]),
    ]
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
    full = list(PROFILE_METRICS)
    variants = {"full": full}
    for name in families:
        drop = set(family(FAMILIES[name]))
        variants[f"-{name}"] = [m for m in full if m not in drop]
    if len(families) > 1:
        drop = {m for name in families for m in family(FAMILIES[name])}
        variants["-" + "-".join(families)] = [m for m in full if m not in drop]
    rows = {}
    import os

    with child_environ():
        env = dict(os.environ)
        rows["alone_0"] = run([sys.executable, *program], env)
        for r in range(rounds):
            for name, metrics in variants.items():
                if r and name != "full" and name != list(variants)[-1]:
                    continue  # later rounds: the full set and the leanest one only
                rows[f"{name}#{r}"] = run(
                    ncu_argv(metrics, PROFILE_SECTIONS, extra, report) + child, env, timeout=400
                )
            rows[f"alone_{r + 1}"] = run([sys.executable, *program], env)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    report = "/tmp/probe_report"
    result = {"tiny": tiny_sets(report)}
    Path(a.out).write_text(json.dumps(result, indent=1))
    t = result["tiny"]
    full = max(t["full"]["passes"] or [0])
    print(
        "tiny alone",
        t["alone"]["wall_s"],
        "s; full",
        full,
        "passes;",
        "metrics only",
        t["metrics_only"]["passes"],
        "sections only",
        t["sections_only"]["passes"],
    )
    saves = {}
    for k, v in t.items():
        if k.startswith("-") and v["passes"] and max(v["passes"]) < full:
            saves[k] = full - max(v["passes"])
        elif k.startswith("-") and not v["passes"]:
            print("no passes read:", k, v["rc"], v["tail"][-200:])
    for k, d in sorted(saves.items(), key=lambda kv: -kv[1]):
        print(f"  {k}: -{d} pass(es)")
    costly = [k[1:] for k, d in sorted(saves.items(), key=lambda kv: -kv[1]) if k[1:] in FAMILIES][
        :4
    ]
    result["costly_families"] = costly
    result["gpt"] = gpt(report, costly, a.rounds)
    Path(a.out).write_text(json.dumps(result, indent=1))
    for k, v in result["gpt"].items():
        print(
            f"gpt {k:40s} {v['wall_s']:7.2f} s  rc {v['rc']}  launches {len(v['passes'])} "
            f"passes {sum(v['passes'])}"
        )


if __name__ == "__main__":
    main()
