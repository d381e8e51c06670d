"""The goals of issues 24 and 33 on a stored `profkit profile` run, on the H200 (jobs/profile.toml,
jobs/profile_gpt.toml).

    python3 jobs/profile_check.py RUN_DIR --plain-s SECONDS --out CHECK.json
        [--plain-log LOG] [--profile-log LOG] [--pace-pct 15] [--counter-x 2] [--no-agreement]

- timing pass at most 3x the program's own run time (SECONDS: the program run alone, wall);
- agreement: each top group's share of device time within 5 points of the share ncu's own
  durations give it: ncu (gpu__time_duration.sum only) on every kernel launched in the run's
  measured region, the launches matched to the timing pass's by launch order;
- the pace pass: a step's length without the profiler within 15% (--pace-pct) of the length the
  program reports for its last steps when run alone (--plain-log: its "last K steps: X ms per
  step" line; each of its steps ends synchronized); with --profile-log, also against the line
  the program printed in the pace pass's own run (an INFO line, no goal);
- the counter pass (issue 33): ok, the top groups the ones profiled, each with a launch matched,
  launches profiled against launches used, and (--counter-x) its wall time at most X times the
  program's own.
--no-agreement leaves out the second ncu run (the agreement goal).
Prints one PASS/FAIL line per goal and writes the figures to CHECK.json.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

import pandas as pd

from profkit import store
from profkit.counters import ncu
from profkit.counters.ncu_rep import read_report
from profkit.explain.kernel_family import short_name
from profkit.workload import profile, timing_pass
from profkit.workload.program import child_environ, parse_program

GOAL_TIMING_X = 3.0
GOAL_SHARE_POINTS = 5.0
GOAL_PACE_PCT = 15.0


def ncu_shares(run: store.Run, timeout_s: float) -> tuple[pd.DataFrame, dict]:
    """Per group: ncu's total duration and share over the measured region's launches."""
    export = timing_pass.read_export(run.path / profile.EXPORT)
    acts, ranges = timing_pass.frames(export)
    opts = run.manifest["options"]
    region = timing_pass.measure_region(
        acts, ranges, step_range=opts["step_range"], steps=opts["steps"], group_by=opts["group_by"]
    )
    timing_pass.groups(region, run.manifest["kernel"])
    seq = acts[acts["kind"] == "kernel"].sort_values("order").reset_index(drop=True)
    seq["case"] = seq["order"].map(region.launches.set_index("order")["case"])
    inside = seq.index[seq["case"].notna()]
    skip, count = int(inside.min()), int(inside.max() - inside.min() + 1)
    program = parse_program(run.manifest["program"]["argv"])
    with tempfile.TemporaryDirectory(prefix="profkit-check-") as tmp:
        with child_environ():
            result = ncu.run_counter_pass(
                program.child_argv(None),
                Path(tmp) / "durations",
                timeout_s=timeout_s,
                log_path=Path(tmp) / "ncu.log",
                metrics=["gpu__time_duration.sum"],
                sections=[],
                nvtx_include=None,
                extra_args=["--launch-skip", str(skip), "--launch-count", str(count)],
            )
        if not result.ok:
            raise SystemExit(f"ncu failed: {result.message}")
        kernels = read_report(result.report_path).kernels
    expected = seq.iloc[skip : skip + len(kernels)].reset_index(drop=True)
    names = zip(kernels["kernel_name"], expected["name"], strict=False)
    same = [a == short_name(b, 10**6) for a, b in names]
    expected["ncu_ms"] = kernels["ncu_duration_ms"].to_numpy()
    mine = expected[expected["case"].notna()]
    total = mine["ncu_ms"].sum()
    by = mine.groupby("case")["ncu_ms"].sum()
    info = {
        "launch_skip": skip,
        "launch_count": count,
        "profiled": len(kernels),
        "names_agree": int(sum(same)),
        "ncu_wall_s": round(result.wall_s, 1),
    }
    return pd.DataFrame({"ncu_ms": by, "ncu_share_pct": 100 * by / total}), info


def same_run(block: dict, profile_log: str) -> dict:
    """The pace pass against the step clock the program printed in that same run (its output
    follows profkit's "pace pass: the program again" line): the measurement alone, without the
    run-to-run drift of a step (a host-bound step moved 28% between runs of one job)."""
    tail = profile_log.split("pace pass: the program again", 1)[-1]
    found = re.search(r"last (\d+) steps: ([\d.]+) ms per step", tail)
    if found is None:
        return {}
    own = float(found[2])
    diff = 100 * (block["period_ms"] - own) / own
    print(
        f"INFO pace pass against the clock the program printed in that run: {own:.3f} ms "
        f"({diff:+.1f}%)"
    )
    return {"same_run_step_ms": own, "same_run_diff_pct": round(diff, 2)}


def pace_check(run: store.Run, plain_log: str, goal_pct: float) -> tuple[bool, dict]:
    block = run.manifest.get("pace") or {}
    found = re.search(r"last (\d+) steps: ([\d.]+) ms per step", plain_log)
    if block.get("status") != "ok" or found is None:
        print(f"FAIL pace pass {block.get('status')}: {block.get('reason', 'no step length')}")
        return False, {"pace": block}
    own = float(found[2])
    diff = 100 * (block["period_ms"] - own) / own
    good = abs(diff) <= goal_pct
    print(f"{'PASS' if good else 'FAIL'} pace pass: a step {block['period_ms']:.3f} ms alone "
          f"({block['profiled_period_ms']:.3f} under the profiler) against the program's own "
          f"{own:.3f} ms ({diff:+.1f}%; goal within {goal_pct:g}%); GPU idle "
          f"{block['gpu_idle_pct']:.1f}% alone, {block['profiled_gpu_idle_pct']:.1f}% under it, "
          f"{run.manifest['region']['host_gap_pct']:.1f}% in the profiled GPU span")  # fmt: skip
    return good, {**block, "program_step_ms": own, "diff_pct": round(diff, 2)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run", type=Path)
    p.add_argument("--plain-s", type=float, required=True, help="the program's own wall time")
    p.add_argument("--plain-log", type=Path, help="the program's own output, run alone")
    p.add_argument("--profile-log", type=Path, help="profkit profile's output, the program's in it")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--top", type=int, default=10)
    p.add_argument("--ncu-timeout", type=float, default=240)
    p.add_argument("--pace-pct", type=float, default=GOAL_PACE_PCT)
    p.add_argument("--counter-x", type=float, help="counter pass at most X times --plain-s")
    p.add_argument("--no-agreement", action="store_true", help="skip the ncu durations run")
    args = p.parse_args()
    run = store.load(args.run)
    out: dict = {"run": run.run_id, "plain_s": args.plain_s}
    ok = True
    timing_s = run.manifest["timing"]["wall_s"]
    ratio = timing_s / args.plain_s
    out["timing"] = {"timing_pass_s": timing_s, "ratio": round(ratio, 2)}
    good = ratio <= GOAL_TIMING_X
    ok &= good
    print(f"{'PASS' if good else 'FAIL'} timing pass {timing_s:.1f} s = {ratio:.2f}x the "
          f"program's own {args.plain_s:.1f} s (goal <= {GOAL_TIMING_X:g}x)")  # fmt: skip
    if not args.no_agreement:
        ok &= agreement(run, args, out)
    if args.plain_log is not None:
        good, out["pace"] = pace_check(run, args.plain_log.read_text(), args.pace_pct)
        ok &= good
        if args.profile_log is not None and good is not None and "period_ms" in out["pace"]:
            out["pace"].update(same_run(out["pace"], args.profile_log.read_text()))
    ok &= counter_check(run, args, out)
    args.out.write_text(json.dumps(out, indent=2) + "\n")
    return 0 if ok else 1


def agreement(run: store.Run, args, out: dict) -> bool:
    shares, info = ncu_shares(run, args.ncu_timeout)
    top = run.cases.sort_values("rank").head(args.top).set_index("case")
    both = top[["variant", "time_share_pct"]].join(shares, how="left")
    both["diff_points"] = both["time_share_pct"] - both["ncu_share_pct"]
    worst = float(both["diff_points"].abs().max())
    good = bool(both["ncu_share_pct"].notna().all()) and worst <= GOAL_SHARE_POINTS
    out["agreement"] = {**info, "max_diff_points": round(worst, 2), "groups": [
        {k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()}
        for r in both.reset_index().to_dict("records")
    ]}  # fmt: skip
    print(f"{'PASS' if good else 'FAIL'} time shares within {worst:.2f} points of ncu's "
          f"durations over the top {len(both)} groups (goal <= {GOAL_SHARE_POINTS:g}; "
          f"{info['names_agree']} of {info['profiled']} launch names agree)")  # fmt: skip
    for r in both.itertuples():
        print(f"  {r.time_share_pct:6.2f}% vs ncu {r.ncu_share_pct:6.2f}%  {r.variant}")
    return good


def counter_check(run: store.Run, args, out: dict) -> bool:
    """The counter pass ran, on the top groups, one matched launch each, and (--counter-x) cost
    at most X times the program's own run."""
    counters = run.manifest["counters"]
    keys = ("status", "wall_s", "kernels_profiled", "launches_expected", "launches_used",
            "selection", "passes", "groups")  # fmt: skip
    block = {k: counters.get(k) for k in keys}
    top = list(run.cases.sort_values("rank").head(args.top)["case"])
    matched = run.kernels["case"].value_counts() if run.kernels is not None else pd.Series()
    block["top_groups"] = top
    block["matched_per_group"] = {c: int(matched.get(c, 0)) for c in top}
    good = counters.get("status") == "ok"
    print(f"{'PASS' if good else 'FAIL'} counter pass {counters.get('status')} "
          f"({counters.get('selection')}): {counters.get('kernels_profiled')} launches profiled "
          f"for {len(run.kernels) if run.kernels is not None else 0} used, "
          f"{counters.get('passes')} passes, {counters.get('wall_s')} s")  # fmt: skip
    same = counters.get("groups") == top and all(matched.get(c, 0) >= 1 for c in top)
    print(f"{'PASS' if same else 'FAIL'} the top {len(top)} groups profiled, each with a launch "
          f"matched ({sum(matched.get(c, 0) >= 1 for c in top)} of {len(top)})")  # fmt: skip
    good &= same
    if args.counter_x is not None:
        ratio = (counters.get("wall_s") or float("inf")) / args.plain_s
        block["ratio"] = round(ratio, 2)
        fast = ratio <= args.counter_x
        print(f"{'PASS' if fast else 'FAIL'} counter pass {counters.get('wall_s')} s = "
              f"{ratio:.2f}x the program's own {args.plain_s:.1f} s "
              f"(goal <= {args.counter_x:g}x)")  # fmt: skip
        good &= fast
    out["counter_pass"] = block
    return good


if __name__ == "__main__":
    sys.exit(main())
