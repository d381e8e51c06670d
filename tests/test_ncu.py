"""profkit.counters.ncu: the ncu command line, and every failure path through a fake `ncu` on
PATH."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from profkit.counters import ncu
from profkit.counters.metrics import DEFAULT_SECTIONS, METRICS

FAKE_NCU = Path(__file__).parent / "fake_ncu" / "ncu"
PROGRAM = ["python", "-m", "profkit.capture", "--kernel", "rmsnorm"]
PERM_NAMES = ("RmProfilingAdminOnly", "NVreg_RestrictProfilingToAdminUsers", "SYS_ADMIN")


@pytest.fixture
def fake_ncu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The fake ncu, first on PATH, run by this interpreter (no reliance on the exec bit)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "ncu"
    body = FAKE_NCU.read_text().split("\n", 1)[1]
    fake.write_text(f"#!{sys.executable}\n{body}")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv(ncu.NCU_ENV, raising=False)
    monkeypatch.setenv("FAKE_NCU_ARGV", str(tmp_path / "argv.json"))
    return fake


def run_fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str, **kwargs):
    monkeypatch.setenv("FAKE_NCU_MODE", mode)
    return ncu.run_counter_pass(
        PROGRAM, tmp_path / "run" / "counters", log_path=tmp_path / "run" / "ncu.log", **kwargs
    )


def value_after(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


# --- the command line ------------------------------------------------------------------------


def test_build_argv_defaults(tmp_path: Path) -> None:
    argv = ncu.build_argv("/opt/ncu", tmp_path / "counters.ncu-rep", PROGRAM)
    assert isinstance(argv, list) and all(isinstance(a, str) for a in argv)
    assert argv[0] == "/opt/ncu"
    assert argv[-len(PROGRAM) :] == PROGRAM
    assert argv[1:4] == ["--nvtx", "--nvtx-include", "regex:profkit@.+/"]
    assert value_after(argv, "--replay-mode") == "kernel"
    assert value_after(argv, "--clock-control") == "none"
    assert value_after(argv, "--cache-control") == "all"
    assert value_after(argv, "--metrics").split(",") == [m.ncu for m in METRICS]
    sections = [argv[i + 1] for i, a in enumerate(argv) if a == "--section"]
    assert sections == list(DEFAULT_SECTIONS)
    assert "--set" not in argv
    # ncu adds .ncu-rep itself: -o takes the path without it; -f overwrites
    assert argv[-len(PROGRAM) - 3 : -len(PROGRAM)] == ["-f", "-o", str(tmp_path / "counters")]


def test_build_argv_report_path_without_suffix(tmp_path: Path) -> None:
    argv = ncu.build_argv("ncu", tmp_path / "counters", PROGRAM)
    assert value_after(argv, "-o") == str(tmp_path / "counters")
    assert ncu.report_file(tmp_path / "counters") == tmp_path / "counters.ncu-rep"


def test_build_argv_options(tmp_path: Path) -> None:
    argv = ncu.build_argv(
        "ncu",
        tmp_path / "r",
        PROGRAM,
        metrics=["gpu__time_duration.sum"],
        sections=["Occupancy"],
        clock_control="base",
        extra_args=["--target-processes", "all"],
    )
    assert value_after(argv, "--clock-control") == "base"
    assert value_after(argv, "--metrics") == "gpu__time_duration.sum"
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "--section"] == ["Occupancy"]
    assert value_after(argv, "--target-processes") == "all"
    assert argv.index("--target-processes") < argv.index("-o")
    assert argv[-len(PROGRAM) :] == PROGRAM


def test_build_argv_full_set_drops_default_sections(tmp_path: Path) -> None:
    argv = ncu.build_argv("ncu", tmp_path / "r", PROGRAM, set_name="full")
    assert value_after(argv, "--set") == "full"
    assert "--section" not in argv
    assert value_after(argv, "--metrics").split(",") == [m.ncu for m in METRICS]


def test_build_argv_without_metrics_or_filter(tmp_path: Path) -> None:
    argv = ncu.build_argv(
        "ncu", tmp_path / "r", PROGRAM, metrics=[], sections=[], nvtx_include=None
    )
    assert "--metrics" not in argv and "--section" not in argv
    assert "--nvtx" not in argv and "--nvtx-include" not in argv


def test_build_argv_rejects_clock_locking_typos(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="clock_control"):
        ncu.build_argv("ncu", tmp_path / "r", PROGRAM, clock_control="locked")


# --- classify, on NVIDIA's texts --------------------------------------------------------------

PERM_LINE = (
    "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
    "Performance Counters on the target device 0.\n"
)
NO_KERNELS = "==WARNING== No kernels were profiled.\n"
APP_FAILED = "==ERROR== The application returned an error code (1).\n"


@pytest.mark.parametrize(
    ("returncode", "text", "report", "timed_out", "problem"),
    [
        (0, "==PROF== Report: /r/counters.ncu-rep\n", True, False, None),
        (0, NO_KERNELS, False, False, "no_kernels"),
        (0, PERM_LINE, False, False, "no_permission"),
        (1, PERM_LINE, False, False, "no_permission"),
        # the permission error explains the empty profile, so it wins
        (0, PERM_LINE + NO_KERNELS, False, False, "no_permission"),
        (1, APP_FAILED, False, False, "app_failed"),
        # a program that failed before its first range leaves nothing to profile
        (1, APP_FAILED + NO_KERNELS, False, False, "app_failed"),
        (0, "==ERROR== Failed to prepare kernel for profiling\n", True, False, "ncu_failed"),
        (3, "", False, False, "ncu_failed"),
        (-11, "", False, False, "ncu_failed"),
        (0, "==PROF== Disconnected from process 1\n", False, False, "ncu_failed"),
        (None, "==PROF== Connected to process 1\n", False, True, "timeout"),
    ],
)
def test_classify(returncode, text, report, timed_out, problem) -> None:
    d = ncu.classify(returncode, text, report, timed_out)
    assert d.problem == problem
    assert problem is None or problem in ncu.PROBLEMS
    assert d.reason and "\n" not in d.reason + d.fix
    assert (problem is None) == (d.fix == "")
    if problem is not None:
        assert d.fix.startswith("Fix:")


def test_classify_messages_name_the_cause() -> None:
    crashed = ncu.classify(-11, "", False, False).reason
    assert "signal 11" in crashed
    failed = ncu.classify(0, "==ERROR== Failed to prepare kernel for profiling\n", False, False)
    assert "Failed to prepare kernel for profiling" in failed.reason
    app = ncu.classify(
        2,
        "==ERROR== The application returned an error code (2).",
        False,
        False,
        log_path=Path("/runs/x/ncu.log"),
    )
    assert "error code 2" in app.reason and "/runs/x/ncu.log" in app.fix and app.app_code == 2
    slow = ncu.classify(None, "", False, True, timeout_s=90)
    assert "90 s" in slow.reason
    perm = ncu.classify(0, PERM_LINE, False, False)
    assert all(name in perm.reason + perm.fix for name in PERM_NAMES)
    assert "profkit doctor" in perm.fix


def test_metrics_na_message() -> None:
    message = ncu.metrics_na_message(["sm__pipe_tensor_op_gmma_cycles_active.avg", "x__y.sum"])
    assert message == (
        "ncu reported 2 metric(s) as n/a (not supported on this GPU or unknown): "
        "sm__pipe_tensor_op_gmma_cycles_active.avg, x__y.sum; their columns stay empty"
    )


# --- finding ncu --------------------------------------------------------------------------------


def test_find_ncu_prefers_env(fake_ncu: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert ncu.find_ncu() == str(fake_ncu)
    monkeypatch.setenv(ncu.NCU_ENV, "/opt/nsight/ncu")
    assert ncu.find_ncu() == "/opt/nsight/ncu"


def test_ncu_version(fake_ncu: Path) -> None:
    assert ncu.ncu_version(str(fake_ncu)) == "2025.3.1.0"
    assert ncu.ncu_version(sys.executable) is None  # answers --version, but not as ncu
    assert ncu.ncu_version("/nonexistent/ncu") is None


# --- the counter pass through the fake ncu --------------------------------------------------------


def test_success(fake_ncu: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = run_fake(tmp_path, monkeypatch, "ok")
    assert result.ok and result.problem is None
    assert result.returncode == 0
    assert result.report_path == tmp_path / "run" / "counters.ncu-rep"
    assert result.report_path.stat().st_size > 0
    assert result.ncu_version == "2025.3.1.0"
    assert result.argv[0] == str(fake_ncu)
    assert json.loads((tmp_path / "argv.json").read_text()) == result.argv[1:]
    assert "==PROF== Report:" in (tmp_path / "run" / "ncu.log").read_text()
    assert result.to_manifest() == {
        "status": "ok",
        "problem": None,
        "reason": None,
        "fix": None,
        "report": "counters.ncu-rep",
        "ncu_version": "2025.3.1.0",
        "sections": list(DEFAULT_SECTIONS),
        "metrics": [m.ncu for m in METRICS],
        "set": None,
        "clock_control": "none",
        "returncode": 0,
        "wall_s": round(result.wall_s, 3),
    }


def test_success_without_log_file(
    fake_ncu: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_NCU_MODE", "ok")
    result = ncu.run_counter_pass(
        PROGRAM, tmp_path / "counters.ncu-rep", metrics=["gpu__time_duration.sum"], set_name="full"
    )
    assert result.ok
    assert result.to_manifest()["metrics"] == ["gpu__time_duration.sum"]
    assert result.to_manifest()["sections"] == []
    assert result.to_manifest()["set"] == "full"


@pytest.mark.parametrize("exit_code", [0, 1])
def test_no_permission(
    fake_ncu: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exit_code: int
) -> None:
    monkeypatch.setenv("FAKE_NCU_EXIT", str(exit_code))
    result = run_fake(tmp_path, monkeypatch, "perm")
    assert not result.ok
    assert result.problem == "no_permission"
    assert result.returncode == exit_code
    assert result.report_path is None
    for name in PERM_NAMES:
        assert name in result.message
    block = result.to_manifest()
    assert block["status"] == "timing_only" and block["problem"] == "no_permission"
    assert "ERR_NVGPUCTRPERM" in block["reason"] and block["fix"].startswith("Fix:")


def test_no_kernels_exit_zero(
    fake_ncu: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = run_fake(tmp_path, monkeypatch, "no_kernels")
    assert result.returncode == 0
    assert (result.ok, result.problem) == (False, "no_kernels")
    assert "NVTX" in result.message


def test_app_failed(fake_ncu: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = run_fake(tmp_path, monkeypatch, "app_failed")
    assert (result.problem, result.returncode) == ("app_failed", 1)
    assert str(tmp_path / "run" / "ncu.log") in result.message
    # stderr of the program lands in the same log
    assert "CUDA error: out of memory" in (tmp_path / "run" / "ncu.log").read_text()


@pytest.mark.parametrize(
    ("mode", "returncode", "words"),
    [
        ("other_error", 0, "Failed to prepare kernel"),
        ("crash", -11, "signal 11"),
        ("silent", 0, "without writing its report"),
    ],
)
def test_ncu_failed(
    fake_ncu: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
    returncode: int,
    words: str,
) -> None:
    result = run_fake(tmp_path, monkeypatch, mode)
    assert (result.ok, result.problem, result.returncode) == (False, "ncu_failed", returncode)
    assert words in result.message


def test_stale_report_is_not_taken_for_this_run(
    fake_ncu: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stale = tmp_path / "run" / "counters.ncu-rep"
    stale.parent.mkdir()
    stale.write_bytes(b"from an earlier run")
    result = run_fake(tmp_path, monkeypatch, "silent")
    assert result.problem == "ncu_failed" and result.report_path is None
    assert not stale.exists()


def _alive(pid: int) -> bool:
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def test_timeout_kills_the_process_group(
    fake_ncu: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pid_file = tmp_path / "child.pid"
    monkeypatch.setenv("FAKE_NCU_CHILD_PID", str(pid_file))
    start = time.monotonic()
    result = run_fake(tmp_path, monkeypatch, "sleep", timeout_s=1.5)
    assert time.monotonic() - start < 8
    assert (result.ok, result.problem, result.returncode) == (False, "timeout", None)
    assert "1.5 s" in result.message
    child = int(pid_file.read_text())  # the "program" ncu launched, in ncu's process group
    deadline = time.monotonic() + 2
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)


def test_ncu_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv(ncu.NCU_ENV, raising=False)
    assert ncu.find_ncu() is None
    result = ncu.run_counter_pass(PROGRAM, tmp_path / "counters")
    assert (result.ok, result.problem, result.report_path) == (False, "ncu_missing", None)
    assert "PATH" in result.message and ncu.NCU_ENV in result.message
    assert result.argv[-len(PROGRAM) :] == PROGRAM
    assert result.to_manifest()["status"] == "timing_only"


def test_ncu_env_names_no_program(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ncu.NCU_ENV, str(tmp_path / "no-such-ncu"))
    result = ncu.run_counter_pass(PROGRAM, tmp_path / "counters")
    assert result.problem == "ncu_missing"
    assert str(tmp_path / "no-such-ncu") in result.message


# --- doctor ---


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.fixture
def no_admin(tmp_path: Path) -> Path:
    return write(tmp_path / "status", "Name:\tpython\nCapEff:\t0000000000000000\n")


@pytest.fixture
def admin(tmp_path: Path) -> Path:
    return write(tmp_path / "status", "Name:\tpython\nCapEff:\t000001ffffffffff\n")


def checks_by_name(checks: list[ncu.Check]) -> dict[str, ncu.Check]:
    assert all(isinstance(c, ncu.Check) for c in checks)
    return {c.name: c for c in checks}


def test_doctor_restricted_driver(
    fake_ncu: Path, tmp_path: Path, no_admin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    params = write(tmp_path / "params", "ResmanDebugLevel: 4294967295\nRmProfilingAdminOnly: 1\n")
    monkeypatch.setenv("FAKE_NCU_MODE", "perm")
    checks = checks_by_name(ncu.counter_access(params, status_path=no_admin, timeout_s=10))
    assert checks["ncu"].ok is True and "2025.3.1.0" in checks["ncu"].detail
    driver = checks["RmProfilingAdminOnly"]
    assert driver.ok is False
    assert "NVreg_RestrictProfilingToAdminUsers=0" in driver.detail
    assert "SYS_ADMIN" in driver.detail
    counters = checks["counters"]
    assert counters.ok is False and counters.detail.startswith("no:")
    assert "RmProfilingAdminOnly" in counters.detail


def test_doctor_restricted_driver_as_admin(tmp_path: Path, admin: Path) -> None:
    params = write(tmp_path / "params", "RmProfilingAdminOnly: 1\n")
    checks = checks_by_name(
        ncu.counter_access(params, ncu="/nonexistent/ncu", status_path=admin, timeout_s=10)
    )
    assert checks["RmProfilingAdminOnly"].ok is True


def test_doctor_open_driver(
    fake_ncu: Path, tmp_path: Path, no_admin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    params = write(tmp_path / "params", "RmProfilingAdminOnly: 0\n")
    monkeypatch.setenv("FAKE_NCU_MODE", "ok")
    checks = checks_by_name(ncu.counter_access(params, status_path=no_admin, timeout_s=10))
    assert checks["RmProfilingAdminOnly"].ok is True
    assert checks["counters"].ok is True
    assert checks["counters"].detail.startswith("yes")
    probe = json.loads((tmp_path / "argv.json").read_text())
    assert value_after(probe, "--metrics") == "gpu__time_duration.sum"
    assert value_after(probe, "-c") == "1"
    assert value_after(probe, "--clock-control") == "none"
    assert "--nvtx" not in probe and "--section" not in probe
    assert probe[-3:-1] == [sys.executable, "-c"]


def test_doctor_probe_program_fails(
    fake_ncu: Path, tmp_path: Path, no_admin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_NCU_MODE", "app_failed")
    checks = checks_by_name(
        ncu.counter_access(tmp_path / "absent", status_path=no_admin, timeout_s=10)
    )
    assert checks["counters"].ok is None
    assert "torch with CUDA" in checks["counters"].detail


def test_doctor_without_driver_or_ncu(
    tmp_path: Path, no_admin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv(ncu.NCU_ENV, raising=False)
    checks = checks_by_name(ncu.counter_access(tmp_path / "absent", status_path=no_admin))
    assert list(checks) == ["ncu", "RmProfilingAdminOnly", "counters"]
    assert checks["ncu"].ok is False and ncu.NCU_ENV in checks["ncu"].detail
    assert checks["RmProfilingAdminOnly"].ok is None
    assert checks["counters"].ok is None
