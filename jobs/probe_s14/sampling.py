"""Session 14 probe 11 (issue 33): what PC sampling costs in the GPT's counter pass, and whether a
fixed sampling interval (no 'auto' search) keeps the sampled stall shares. Run on the H200:

    PYTHONPATH=. python3 jobs/probe_s14/sampling.py --out $OUT/probe11.json

Each variant is the stored GPT run's gate under ncu as the counter pass runs it (passes.py's
command) plus extra ncu options; each report's per-launch sample count and stall shares are kept.
"""

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import passes  # noqa: E402

from profkit.counters.metrics import PROFILE_METRICS, PROFILE_SECTIONS, SAMPLE_COUNT, SAMPLED_STALLS  # noqa: E402
from profkit.counters.ncu_rep import import_ncu_report  # noqa: E402
from profkit.workload.program import child_environ  # noqa: E402

VARIANTS = {
    "auto": [],
    "interval5": ["--warp-sampling-interval", "5"],
}


def shares(report):
    lib = import_ncu_report()
    ctx = lib.load_report(report)
    out = []
    for r in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r)
        for a in range(rng.num_actions()):
            act = rng.action_by_idx(a)

            def val(name, act=act):
                m = act.metric_by_name(name)
                return None if m is None else m.as_double()

            n = val(SAMPLE_COUNT)
            row = {
                "kernel": act.name(),
                "samples": n,
                "ms": (val("gpu__time_duration.sum") or 0) / 1e6,
            }
            if n:
                row.update(
                    {k: round(100 * (val(v) or 0) / n, 2) for k, v in SAMPLED_STALLS.items()}
                )
            out.append(row)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    runs = sorted(Path("tests/data/workloads").glob("gpt_train-*"))
    man = json.loads((runs[-1] / "manifest.json").read_text())
    gate = Path("/tmp/probe_gate.json")
    gate.write_text((runs[-1] / "gate.json").read_text())
    c = man["counters"]
    pattern = "|".join(passes.re.escape(n) for n in c["kernel_names"])
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
    lean = [m for m in full if not m.startswith("smsp__pcsamp_")]
    result = {}
    with child_environ():
        env = dict(os.environ)
        result["alone_0"] = passes.run([sys.executable, *program], env)
        for r in range(2):
            for name, opts in VARIANTS.items():
                if r and name not in ("auto", "interval5"):
                    continue  # the second round: the default and the fixed interval again
                rep = f"/tmp/probe11_{name}_{r}"
                metrics = lean if opts is None else full
                argv = passes.ncu_argv(metrics, PROFILE_SECTIONS, extra + (opts or []), rep) + child
                row = passes.run(argv, env, timeout=400)
                if opts is not None and os.path.exists(rep + ".ncu-rep"):
                    row["shares"] = shares(rep + ".ncu-rep")
                result[f"{name}#{r}"] = row
                Path(a.out).write_text(json.dumps(result, indent=1))
            result[f"alone_{r + 1}"] = passes.run([sys.executable, *program], env)
    Path(a.out).write_text(json.dumps(result, indent=1))
    base = {s["kernel"] + str(i): s for i, s in enumerate(result["auto#0"].get("shares", []))}
    for k, v in result.items():
        line = f"{k:16s} {v['wall_s']:7.2f} s rc {v['rc']} passes {sum(v['passes'])}"
        sh = v.get("shares")
        if sh:
            samples = [s["samples"] for s in sh]
            worst = 0.0
            for i, s in enumerate(sh):
                b = base.get(s["kernel"] + str(i))
                if b and s.get("samples") and b.get("samples"):
                    worst = max(worst, max(abs(s[r] - b[r]) for r in SAMPLED_STALLS))
            line += f" samples {min(samples):.0f}-{max(samples):.0f}"
            line += f" worst share diff vs auto#0 {worst:.1f}"
        print(line)


if __name__ == "__main__":
    main()
