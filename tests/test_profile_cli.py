"""`profkit profile` end to end off the GPU: the timing pass's child stood in for by the
hand-made export (tests/workload_export.py) where kernels are needed, a fake ncu for the counter
pass (it hands back the real fx_rmsnorm report, or NVIDIA's permission text), and the real child
and a tiny script for the faults that need no kernel: the program's failure, the arguments passed
through, Ctrl-C. The stored run is read by show, explain, compare and dashboard."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner, Result
from workload_export import KERNELS, SOURCE_KERNELS, write_export

from profkit import store
from profkit.cli import cli
from profkit.workload import profile as workload_profile

ROOT = Path(__file__).resolve().parents[1]


def invoke(*args: object) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "train.py"
    path.write_text("print('training')\n")
    return path


@pytest.fixture
def hand_child(monkeypatch: pytest.MonkeyPatch) -> dict:
    """The timing pass's child replaced: it 'exports' the hand-made two-step program. Set
    exit_status and tail in the returned dict to make the program fail, kernels to launch others."""
    said: dict = {"exit_status": 0, "tail": [], "argv": None, "kernels": KERNELS, "calls": False}
    # the pace pass: the two steps open 0.6 ms apart without the profiler (1 ms under it)
    said["pace"] = {"format": "profkit-pace", "opens_ns": [0, 600_000], "exit_status": 0}

    def child(argv: list[str]) -> tuple[int, float, list[str]]:
        if "--pace" in argv:
            said["pace_argv"] = argv
            Path(argv[argv.index("--pace") + 1]).write_text(json.dumps(said["pace"]))
            return said["pace"]["exit_status"], 0.5, []
        said["argv"] = argv
        export = Path(argv[argv.index("--export") + 1])
        write_export(
            export, exit_status=said["exit_status"], kernels=said["kernels"], calls=said["calls"]
        )
        return said["exit_status"], 0.7, said["tail"]

    monkeypatch.setattr(workload_profile, "run_child", child)
    return said


def profile(out: Path, script: Path, *options: object) -> Result:
    return invoke("profile", "--out", out, "--steps", 1, "--step-range", "step", *options,
                  "--", sys.executable, script, "--lr", "3e-4", "--", "a b")  # fmt: skip


def only_run(out: Path) -> store.Run:
    runs = store.list_runs(out)
    assert len(runs) == 1 and not [p for p in out.iterdir() if p.name.startswith(".")]
    return store.load(runs[0])


def test_a_profile_run_is_stored_like_a_capture_and_every_reader_reads_it(
    tmp_path: Path, script: Path, hand_child: dict, fake_ncu_on_path: Path, ncu_rep_path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    argv_file = tmp_path / "ncu-argv.json"
    monkeypatch.setenv("FAKE_NCU_COPY", str(ncu_rep_path("fx_rmsnorm")))
    monkeypatch.setenv("FAKE_NCU_ARGV", str(argv_file))
    out = tmp_path / "runs"
    result = profile(out, script)
    assert result.exit_code == 0, (result.output, result.exception)
    run = only_run(out)
    assert run.manifest["kind"] == "profile" and run.manifest["kernel"] == "train"
    assert run.verified and len(run.cases) == 7
    counters = run.manifest["counters"]
    assert counters["status"] == "ok" and counters["matched_by"] == "launch order"
    assert (counters["kernels_profiled"], counters["passes"]) == (9, 11)
    # counted from where the measured step (the second) opens: ncu starts there, on the child's
    # cudaProfilerStart, so launches before it (a first run's compilation) cannot shift it
    assert (counters["launch_skip"], counters["launch_count"]) == (0, 9)
    assert run.cases["dram_throughput_pct"].notna().all()
    assert run.manifest["region"]["steps_skipped"] == 1
    # ncu runs the same program, its arguments untouched, under the child's plain mode
    ncu_argv = json.loads(argv_file.read_text())
    assert ncu_argv[-6:] == ["--", str(script), "--lr", "3e-4", "--", "a b"]
    assert ncu_argv[ncu_argv.index("--launch-skip") + 1] == "0"
    assert ncu_argv[ncu_argv.index("--profile-from-start") + 1] == "off"
    child = ncu_argv.index("profkit.workload.child")
    assert ncu_argv[child + 1 : child + 7] == [
        "--no-profile", "--step-range", "step", "--start-at-step", "1", "--",
    ]  # fmt: skip
    assert "--no-profile" in ncu_argv and "--emit-nvtx" not in ncu_argv
    assert "--nvtx" in ncu_argv and "--nvtx-include" not in ncu_argv  # ranges named, not filtered
    assert hand_child["argv"][-5:] == [str(script), "--lr", "3e-4", "--", "a b"]
    assert "training" not in result.output  # the child's output is its own (stood in for here)

    shown = invoke("show", run.path, "--format", "csv")
    assert shown.exit_code == 0 and "time_share_pct" in shown.output.splitlines()[0]
    explained = invoke("explain", run.path, "--format", "json")
    assert explained.exit_code == 0, explained.output
    report = json.loads(explained.output)
    headline = report["notes"]["train"]
    # the pace pass's step, 0.6 ms, holds 255.296 us of GPU work (1 ms under the profiler); the
    # elementwise launches (MUL, RSQRT and FILL) take 107.68 us of it, the copy/cast ones (COPY's
    # copy_ and CAST's to) 87.264 us
    assert headline.startswith(
        "The GPU is idle 57% of the step (host gaps; 74% under the profiler): cut the host cost"
    )
    assert "; 18% is in 5 elementwise launches per step (3 groups)" in headline
    assert "; the next 15% is in 2 copy/cast launches per step (2 groups)" in headline
    # and the table per op class below it: share of the step alone, device ms, launches, groups
    table = headline.split("\n")[1:]
    assert table[1].split() == ["elementwise", "17.9%", "0.108", "5", "3"]
    assert table[2].split() == ["copy/cast", "14.5%", "0.087", "2", "2"]
    assert table[-1].split() == ["GPU", "idle", "(host", "gaps)", "57.5%"]
    assert "A step takes 0.600 ms run alone, 1.000 ms under the profiler (pace pass" in headline
    assert run.manifest["pace"]["status"] == "ok" and (run.path / "pace.json").is_file()
    assert hand_child["pace_argv"][-7:] == [
        "--step-range", "step", "--", str(script), "--lr", "3e-4", "--", "a b",
    ][-7:]  # fmt: skip
    assert "Measured: 1 step(s), after 1 warm-up step(s)" in headline
    # the window (the hand export names no op calls): all 9 launches of the step for the 7 used
    assert "Counter pass: ncu profiled 9 launches to use 7 (the top 7 groups, window " in headline
    assert len(report["findings"]) == 7
    text = invoke("explain", run.path)
    assert text.exit_code == 0
    # named for its op class; the terminal cuts the middle of a long subject to fit
    subjects = [f["subject"] for f in report["findings"]]
    assert "21.4% elementwise: vectorized_elementwise_kernel(mul)@eager (2 launches)" in subjects
    assert "21.4% elementwise: vectorize...rnel(mul)@eager (2 launches)" in text.output
    assert invoke("compare", run.path, run.path).exit_code == 0
    page = tmp_path / "page.html"
    drawn = invoke("dashboard", run.path, "--out", page)
    assert drawn.exit_code == 0, drawn.output
    drawn = page.read_text()
    assert "Kernel groups" in drawn and "18% is in 5 elementwise launches" in drawn
    assert "<pre class='note'>  op class (per step)" in drawn  # the table per op class, laid out
    assert "Speedup over the baselines" not in drawn  # a capture's views: no variants here
    assert "vectorized_elementwise_kernel(mul)@eager" in drawn


def test_the_source_pass_keeps_the_chosen_launches_lines(
    tmp_path: Path, script: Path, hand_child: dict, fake_ncu_on_path: Path, ncu_rep_path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    hand_child["kernels"] = SOURCE_KERNELS
    monkeypatch.setenv("FAKE_NCU_COPY", str(ncu_rep_path("fx_source")))
    monkeypatch.setenv("FAKE_NCU_SOURCE_COPY", str(ncu_rep_path("fx_source")))
    out = tmp_path / "runs"
    result = profile(out, script, "--source")
    assert result.exit_code == 0, (result.output, result.exception)
    run = only_run(out)
    block = run.manifest["counters"]["source_pass"]
    assert block["status"] == "ok" and block["lines"] == 26  # fx_source: 11 + 11 + 4 lines
    assert sorted(run.source_lines["launch"].unique()) == [0, 1, 2]
    explained = invoke("explain", run.path)
    assert explained.exit_code == 0
    assert "line 23 (p1.py): 99% of the long-scoreboard" in explained.output  # hist's hot line
    # a source pass that saw other kernels keeps no lines, and says so
    monkeypatch.setenv("FAKE_NCU_SOURCE_COPY", str(ncu_rep_path("fx_rmsnorm")))
    assert profile(tmp_path / "other", script, "--source").exit_code == 0
    block = only_run(tmp_path / "other").manifest["counters"]["source_pass"]
    assert (block["status"], block["problem"]) == ("failed", "no_match")


def test_emit_nvtx_runs_the_counter_pass_under_pytorchs_op_ranges(
    tmp_path: Path, script: Path, hand_child: dict, fake_ncu_on_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    argv_file = tmp_path / "ncu-argv.json"
    monkeypatch.setenv("FAKE_NCU_ARGV", str(argv_file))
    assert profile(tmp_path / "runs", script, "--emit-nvtx").exit_code == 0
    ncu_argv = json.loads(argv_file.read_text())
    child = ncu_argv.index("profkit.workload.child")
    assert ncu_argv[child + 1 : child + 3] == ["--no-profile", "--emit-nvtx"]


def rederived(run: store.Run):
    """The run's kernel groups derived again from its stored timing export."""
    from profkit.workload import timing_pass

    acts, ranges = timing_pass.frames(timing_pass.read_export(run.path / workload_profile.EXPORT))
    opts = run.manifest["options"]
    region = timing_pass.measure_region(
        acts, ranges, step_range=opts["step_range"], steps=opts["steps"], group_by=opts["group_by"]
    )
    return timing_pass.groups(region, run.manifest["kernel"])


def test_a_stored_runs_groups_derive_again_from_its_timing_export(
    tmp_path: Path, script: Path, hand_child: dict
) -> None:
    out = tmp_path / "runs"
    assert profile(out, script, "--no-counters").exit_code == 0
    run = only_run(out)
    table, samples = rederived(run)
    columns = ["case", "launches", "total_ms", "device_p95_ms", "time_share_pct", "rank"]
    pd.testing.assert_frame_equal(
        run.cases[columns].reset_index(drop=True),
        table[columns].reset_index(drop=True),
        check_dtype=False,
        rtol=1e-12,
    )
    assert len(run.samples) == len(samples) == int(run.cases["launches"].sum())


def test_counter_permission_denied_leaves_a_timing_only_run_with_doctors_advice(
    tmp_path: Path, script: Path, hand_child: dict, fake_ncu_on_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setenv("FAKE_NCU_MODE", "perm")
    out = tmp_path / "runs"
    result = profile(out, script)
    assert result.exit_code == 0, result.output
    assert "timing only" in result.stderr and "profkit doctor" in result.stderr
    run = only_run(out)
    assert run.timing_only and run.manifest["counters"]["problem"] == "no_permission"
    assert run.cases["time_share_pct"].notna().all()
    assert run.cases["dram_throughput_pct"].isna().all()


def test_a_failing_program_is_reported_and_what_was_measured_kept_and_marked(
    tmp_path: Path, script: Path, hand_child: dict
) -> None:
    hand_child.update(exit_status=3, tail=["Traceback (most recent call last):", "OOM: boom"])
    out = tmp_path / "runs"
    result = profile(out, script)
    assert result.exit_code == 1
    assert "exited with status 3" in result.stderr and "OOM: boom" in result.stderr
    run = only_run(out)
    assert run.manifest["program"]["exit_status"] == 3
    assert run.manifest["program"]["stderr_tail"][-1] == "OOM: boom"
    assert run.manifest["counters"]["status"] == "skipped"


def test_a_range_that_matches_nothing_names_the_ranges_seen_and_stores_nothing(
    tmp_path: Path, script: Path, hand_child: dict, fake_ncu_on_path: Path
) -> None:
    out = tmp_path / "runs"
    result = profile(out, script, "--range", "attention")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.stderr.splitlines()[-1].startswith("error: --range 'attention' holds no kernel")
    assert "eager" in result.stderr.splitlines()[-1]
    assert store.list_runs(out) == [] and list(out.iterdir()) == []
    # timing only, the filter still names what there is
    result = profile(out, script, "--range", "attention", "--no-counters")
    assert result.exit_code == 1 and "--range 'attention' holds no kernel" in result.stderr


@pytest.mark.parametrize(
    "args, status, words",
    [
        (["--top", "0", "--", "python3", "x.py"], 2, "--top"),
        (["--steps", "3", "--", "python3", "x.py"], 2, "--steps needs --step-range"),
        (["--kernel-regex", "(", "--", "python3", "x.py"], 2, "is not a regex"),
        (["--group-by", "kernel", "--", "python3", "x.py"], 2, "--group-by"),
        (["--source", "--no-counters", "--", "python3", "x.py"], 2, "--source"),
        ([], 2, "Missing argument"),
        (["--", "./train", "--epochs", "1"], 1, "not a Python interpreter"),
        (["--", "python3", "missing_script.py"], 1, "no such script"),
    ],
)
def test_bad_input_is_one_line_and_a_non_zero_exit(args, status, words) -> None:
    result = invoke("profile", *args)
    assert result.exit_code == status and isinstance(result.exception, SystemExit)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and words in lines[0]


def test_the_real_child_passes_arguments_through_and_reports_the_programs_exit(
    tmp_path: Path,
) -> None:
    seen = tmp_path / "argv.json"
    tiny = tmp_path / "tiny.py"
    tiny.write_text(
        "import json, sys\n"
        f"json.dump(sys.argv, open({str(seen)!r}, 'w'))\n"
        "print('tiny: failing on purpose', file=sys.stderr)\n"
        "sys.exit(3)\n"
    )
    out = tmp_path / "runs"
    args = ["--lr", "1e-3", "--", "-x", "a b", "--top", "5"]
    result = invoke("profile", "--out", out, "--", sys.executable, tiny, *args)
    assert result.exit_code == 1 and "Traceback" not in result.output
    last = result.stderr.splitlines()[-1]
    assert last.startswith("error: the program exited with status 3 and launched no CUDA kernel")
    assert "tiny: failing on purpose" in last
    assert json.loads(seen.read_text()) == [str(tiny), *args]
    assert not out.exists() or list(out.iterdir()) == []


def _wait_for(path: Path, limit_s: float = 60.0) -> str:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if path.is_file() and path.read_text().strip():
            return path.read_text().strip()
        time.sleep(0.1)
    raise AssertionError(f"{path} was not written within {limit_s:g} s")


def _gone(pid: int, limit_s: float = 10.0) -> bool:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


def test_ctrl_c_stops_the_child_and_leaves_no_run(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    sleepy = tmp_path / "sleepy.py"
    sleepy.write_text(
        f"import os, time\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\ntime.sleep(60)\n"
    )
    out = tmp_path / "runs"
    proc = subprocess.Popen(
        [sys.executable, "-m", "profkit", "profile", "--out", str(out), "--",
         sys.executable, str(sleepy)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        child = int(_wait_for(pid_file))
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 130, err.decode()
    assert _gone(child), "the program kept running after Ctrl-C"
    assert list(out.iterdir()) == []  # no run, no .tmp-* left


def test_ctrl_c_during_ncu_stops_ncu_and_its_program(tmp_path: Path, fake_ncu_on_path) -> None:
    pid_file = tmp_path / "pid"
    driver = (
        "from pathlib import Path; from profkit.counters import ncu\n"
        f"ncu.run_counter_pass(['python3', 'x.py'], Path({str(tmp_path / 'r')!r}))\n"
    )
    env = {**os.environ, "FAKE_NCU_MODE": "sleep", "FAKE_NCU_CHILD_PID": str(pid_file)}
    proc = subprocess.Popen([sys.executable, "-c", driver], cwd=ROOT, env=env,
                            stderr=subprocess.PIPE)  # fmt: skip
    try:
        child = int(_wait_for(pid_file))
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode != 0
    assert _gone(child), "ncu's program kept running after Ctrl-C"


def test_the_counter_pass_gates_ncu_on_the_chosen_launches_op_calls(
    tmp_path: Path, script: Path, hand_child: dict, fake_ncu_on_path: Path, ncu_rep_path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """With the export's op calls, ncu gets the name filter and no launch window, the child the
    gate's file (kept in the run), and the run says how many launches were profiled for how many
    used."""
    hand_child["calls"] = True
    argv_file = tmp_path / "ncu-argv.json"
    monkeypatch.setenv("FAKE_NCU_COPY", str(ncu_rep_path("fx_rmsnorm")))
    monkeypatch.setenv("FAKE_NCU_ARGV", str(argv_file))
    out = tmp_path / "runs"
    result = profile(out, script, "--top", 3)
    assert result.exit_code == 0, (result.output, result.exception)
    ncu_argv = json.loads(argv_file.read_text())
    child = ncu_argv.index("profkit.workload.child")
    gate = ncu_argv[child + 3]
    assert ncu_argv[child + 1 : child + 5] == ["--no-profile", "--gate", gate, "--"]
    i = ncu_argv.index("--profile-from-start")
    assert ncu_argv[i : i + 7] == [
        "--profile-from-start", "off", "--nvtx", "--kernel-name-base", "function", "--kernel-name",
        "regex:^(?:elementwise_kernel|unrolled_elementwise_kernel|vectorized_elementwise_kernel)$",
    ]  # fmt: skip
    assert ncu_argv[i + 7 : i + 9] == ["--launch-count", "3"]
    assert "--launch-skip" not in ncu_argv
    run = only_run(out)
    assert json.loads((run.path / "gate.json").read_text()) == {
        "step_range": "step", "skipped": 1,
        "calls": [["aten::copy", 0], ["aten::mul", 0], ["aten::rsqrt", 0]], "stop": True,
    }  # fmt: skip
    assert "then the program is stopped" in result.output
    counters = run.manifest["counters"]
    assert (counters["selection"], counters["launches_expected"]) == ("gate", 3)
    # the stand-in ncu hands back all nine launches of fx_rmsnorm: three are used
    assert (counters["kernels_profiled"], counters["launches_used"]) == (9, 3)
    assert "counter pass: 9 launches profiled for 3 used" in result.output
    # its cost against the program's own run time, the pace pass's plain run (issue 33's goal)
    ratio = counters["wall_s"] / run.manifest["pace"]["child_wall_s"]
    assert f"{ratio:.2f}x the program run plainly" in " ".join(result.output.split())
    # the stand-in ncu runs no program, so none was stopped
    assert counters["program_stopped"] is False
    again = profile(tmp_path / "again", script, "--top", 3, "--run-to-end")
    gate = json.loads((only_run(tmp_path / "again").path / "gate.json").read_text())
    assert gate["stop"] is False and "stopped" not in again.output


def test_the_jobs_goal_check_compares_shares_with_ncus_durations(
    tmp_path: Path, script: Path, hand_child: dict, fake_ncu_on_path: Path, ncu_rep_path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """jobs/profile_check.py on a run whose export took its durations from the very report the
    fake ncu hands back: the shares agree exactly, launch by launch."""
    monkeypatch.setenv("FAKE_NCU_COPY", str(ncu_rep_path("fx_rmsnorm")))
    out = tmp_path / "runs"
    assert profile(out, script).exit_code == 0
    run = only_run(out)
    check = tmp_path / "check.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # as jobs/run.py runs it: this checkout first
    done = subprocess.run(
        [sys.executable, "jobs/profile_check.py", str(run.path), "--plain-s", "0.5",
         "--out", str(check)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    said = json.loads(check.read_text())
    assert said["timing"]["ratio"] == 1.4  # the stand-in child's 0.7 s over 0.5 s
    agreement = said["agreement"]
    assert (agreement["launch_skip"], agreement["launch_count"], agreement["names_agree"]) == (
        9, 9, 9)  # fmt: skip
    assert agreement["max_diff_points"] == 0
    assert "PASS time shares within 0.00 points" in done.stdout
    done = subprocess.run(
        [sys.executable, "jobs/profile_check.py", str(run.path), "--plain-s", "0.1",
         "--out", str(check)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1 and "FAIL timing pass 0.7 s = 7.00x" in done.stdout


@pytest.mark.parametrize(
    "pace, option, status, said",
    [
        ({"opens_ns": [0, 1, 2]}, None, "failed", "ran 3 step(s) without the profiler and 2 under"),
        ({"exit_status": 3}, None, "failed", "exited with status 3 without the profiler"),
        ({"format": "other"}, None, "failed", "pace.json is not a profkit pace file"),
        ({}, "--no-pace", "skipped", None),
    ],
)
def test_without_a_timed_step_alone_the_idle_share_is_the_profiled_runs_and_says_so(
    tmp_path: Path, script: Path, hand_child: dict, pace: dict, option: str | None, status: str,
    said: str | None,
) -> None:  # fmt: skip
    hand_child["pace"].update(pace)
    out = tmp_path / "runs"
    result = profile(out, script, "--no-counters", *([option] if option else []))
    assert result.exit_code == 0, (result.output, result.exception)
    run = only_run(out)
    assert run.manifest["pace"]["status"] == status
    headline = json.loads(invoke("explain", run.path, "--format", "json").output)["notes"]["train"]
    # the timing pass's own figures: of the profiled step's 300.296 us GPU span, 107.68 us in the
    # elementwise launches (MUL, RSQRT, FILL), 87.264 us in the copy/cast ones (COPY, CAST)
    assert headline.startswith(
        "36% of the step is in 5 elementwise launches per step (3 groups): capture counters to "
        "see what limits it; the next 29% is in 2 copy/cast launches per step (2 groups)"
    )
    assert "under the profiler" not in headline
    if said:
        assert said in run.manifest["pace"]["reason"] and said in result.output
        assert f"Pace pass: {run.manifest['pace']['reason']}; the idle share is the profiled" in (
            headline
        )
    else:
        assert "pace_argv" not in hand_child and "Pace pass" not in headline


def test_the_real_child_reads_the_host_clock_where_each_step_opens(tmp_path: Path) -> None:
    """The pace child on a program that marks its steps with record_function (NVTX needs CUDA):
    one open per step, in order, as far apart as the program's steps take."""
    program = tmp_path / "steps.py"
    program.write_text(
        "import time, torch\n"
        "for i in range(4):\n"
        "    with torch.profiler.record_function('step'):\n"
        "        with torch.profiler.record_function('inner'):\n"
        "            time.sleep(0.05)\n"
    )
    out = tmp_path / "pace.json"
    argv = [sys.executable, "-m", "profkit.workload.child", "--pace", str(out), "--step-range",
            "step", "--", str(program)]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    data = json.loads(out.read_text())
    assert data["format"] == "profkit-pace" and data["exit_status"] == 0
    opens, closes = data["opens_ns"], data["closes_ns"]
    assert len(opens) == len(closes) == 4
    gaps = [(b - a) / 1e6 for a, b in zip(opens, opens[1:], strict=False)]
    assert all(45 < g < 500 for g in gaps), gaps
    assert all(c > o for o, c in zip(opens, closes, strict=True))
