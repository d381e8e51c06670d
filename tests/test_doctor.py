"""`profkit doctor` through the CLI, under the fake `ncu` (tests/fake_ncu/ncu) in each of its
outcomes and under every odd PROFKIT_NCU: what it says, what it advises, and its exit status."""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from profkit import doctor
from profkit.cli import cli

ROOT = Path(__file__).resolve().parent.parent


def run_doctor(*args: str) -> Result:
    return CliRunner().invoke(cli, ["doctor", *args], env={"COLUMNS": "100"})


def rows(result: Result) -> dict[str, tuple[str, str]]:
    """check name -> (status, detail), wrapped details joined."""
    found: dict[str, list[str]] = {}
    name = ""
    for line in result.stdout.splitlines():
        if not line.startswith("│"):
            continue
        cells = [c.strip() for c in line.strip("│").split("│")]
        if cells[0]:
            name = cells[0]
            found[name] = [cells[1], cells[2]]
        else:
            found[name][1] += " " + cells[2]
    return {k: (v[0], v[1]) for k, v in found.items()}


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


@pytest.fixture(autouse=True)
def temp_in_tmp_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The logs a failed probe keeps land in the test's tmp_path, not in /tmp."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


@pytest.fixture
def gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """A visible GPU, as doctor's torch check would report it (constructed rows: no GPU here)."""
    rows = [("torch", True, "2.11.0 (CUDA 13.0)"), ("GPU", True, "NVIDIA H200, 132 SMs")]
    monkeypatch.setattr(doctor, "gpu_checks", lambda: rows)


@pytest.fixture
def no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = [("torch", True, "2.13.0+cpu"), ("GPU", False, "no CUDA GPU visible to torch")]
    monkeypatch.setattr(doctor, "gpu_checks", lambda: rows)


# --- exit status: 0 counters, 1 timing only, 2 no capture -----------------------------------------


def test_counters_readable_exits_0(fake_ncu_on_path: Path, gpu: None, monkeypatch) -> None:
    monkeypatch.setenv("FAKE_NCU_MODE", "ok")
    result = run_doctor()
    assert result.exit_code == 0, result.output
    assert rows(result)["counters"][0] == "ok"
    assert "GPU counters CAN be read on this host." in result.stdout
    assert "exit status 0" in result.stdout
    # progress goes to stderr, before each step that may take seconds
    assert "checking ncu" in result.stderr and "probing counters" in result.stderr


def test_no_permission_exits_1(fake_ncu_on_path: Path, gpu: None, monkeypatch) -> None:
    monkeypatch.setenv("FAKE_NCU_MODE", "perm")
    result = run_doctor()
    assert result.exit_code == 1
    status, detail = rows(result)["counters"]
    assert status == "no"
    assert detail.startswith("no: ncu may not read GPU performance counters")
    assert "NVreg_RestrictProfilingToAdminUsers=0" in detail
    # no driver params here: the RmProfilingAdminOnly row says "not found", so the advice must
    # not claim the value is 1
    assert rows(result)["RmProfilingAdminOnly"][0] == "?"
    assert "RmProfilingAdminOnly: 1" not in result.stdout
    assert "GPU counters can NOT be read on this host" in result.stdout


def test_no_gpu_means_no_probe_and_exit_2(
    fake_ncu_on_path: Path, no_gpu: None, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("FAKE_NCU_ARGV", str(tmp_path / "argv.json"))  # written by a probe
    result = run_doctor()
    assert result.exit_code == 2
    assert not (tmp_path / "argv.json").exists()  # ncu never ran a program
    status, detail = rows(result)["counters"]
    assert status == "?" and detail.startswith("not probed: no CUDA GPU visible")
    assert "probing counters" not in result.stderr
    assert "Capture can not run here" in result.stdout


def test_no_probe(fake_ncu_on_path: Path, gpu: None) -> None:
    result = run_doctor("--no-probe")
    assert result.exit_code == 0
    assert "counters" not in rows(result)
    assert rows(result)["ncu"][0] == "ok" and "Nsight Compute 2025.3.1.0" in rows(result)["ncu"][1]
    assert "Counter probe skipped (--no-probe)" in result.stdout


def test_exit_status_is_documented() -> None:
    help_text = " ".join(CliRunner().invoke(cli, ["doctor", "--help"]).stdout.split())
    assert "Exit status: 0 capture collects GPU counters here" in help_text
    assert "1 capture runs timing only" in help_text and "2 capture cannot run" in help_text
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert "`profkit doctor` exits 0" in readme


@pytest.mark.parametrize("value", ["-5", "0", "nan", "inf"])
def test_timeout_must_be_finite_and_positive(value: str) -> None:
    result = run_doctor("--timeout", value)
    assert result.exit_code == 2
    assert result.stderr.startswith("error: Invalid value for '--timeout'")
    assert len(result.stderr.strip().splitlines()) == 1


# --- an ncu that is not Nsight Compute, or not there ----------------------------------------------


def test_version_hang_is_stopped_with_its_process_group(
    fake_ncu_on_path: Path, gpu: None, tmp_path: Path, monkeypatch
) -> None:
    pid_file = tmp_path / "child.pid"
    monkeypatch.setenv("FAKE_NCU_VERSION", "hang")
    monkeypatch.setenv("FAKE_NCU_CHILD_PID", str(pid_file))
    start = time.monotonic()
    result = run_doctor("--timeout", "1.5")
    assert time.monotonic() - start < 10  # no 30 s wait, and no probe after it
    assert result.exit_code == 1
    status, detail = rows(result)["ncu"]
    assert status == "no" and "did not answer `--version` within 1.5 s" in detail
    assert rows(result)["counters"][1].startswith("not probed: no working ncu")
    assert "probing counters" not in result.stderr
    child = int(pid_file.read_text())  # the grandchild the hung ncu started
    deadline = time.monotonic() + 2
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child), "an orphan of the hung ncu is still running"


def test_a_program_that_is_not_nsight_compute(
    fake_ncu_on_path: Path, gpu: None, monkeypatch
) -> None:
    monkeypatch.setenv("FAKE_NCU_VERSION", "alien")
    result = run_doctor()
    assert result.exit_code == 1
    status, detail = rows(result)["ncu"]
    assert status == "no" and "does not answer `--version` like Nsight Compute" in detail
    assert "Network Configuration Utility" in detail  # what it did say
    assert rows(result)["counters"][1].startswith("not probed")
    assert "ncu is missing or does not work" in result.stdout


def _not_executable(tmp_path: Path) -> Path:
    path = tmp_path / "ncu"
    path.write_text("#!/bin/sh\necho hi\n")
    path.chmod(0o644)
    return path


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda tmp: tmp / "nonexistent" / "ncu", "no such file"),
        (lambda tmp: tmp, "is a directory, not the ncu program"),
        (_not_executable, "is not executable"),
    ],
    ids=["nonexistent", "directory", "not-executable"],
)
def test_profkit_ncu_that_cannot_run(
    tmp_path: Path, gpu: None, monkeypatch: pytest.MonkeyPatch, make, words: str
) -> None:
    target = make(tmp_path)
    monkeypatch.setenv("PROFKIT_NCU", str(target))
    result = run_doctor()
    assert result.exit_code == 1
    status, detail = rows(result)["ncu"]
    assert status == "no" and words in detail
    assert str(target) in detail.replace(" ", "")  # a long path folds across lines
    assert rows(result)["counters"] == ("?", "not probed: no working ncu (see the ncu row)")
    # a missing ncu is said to be missing, not taken for a host whose counters are locked
    assert "ncu is missing or does not work" in result.stdout
    assert "can NOT be read" not in result.stdout


# --- the probe's advice matches what doctor can do and what it kept -------------------------------


def _log_named(detail: str) -> Path:
    log = Path(detail.rsplit("ncu's output: ", 1)[1].replace(" ", ""))  # a long path folds
    assert log.is_file(), detail
    return log


def test_probe_timeout_advises_doctors_own_option(
    fake_ncu_on_path: Path, gpu: None, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("FAKE_NCU_MODE", "sleep")
    monkeypatch.setenv("FAKE_NCU_CHILD_PID", str(tmp_path / "child.pid"))
    result = run_doctor("--timeout", "1")
    assert result.exit_code == 1
    status, detail = rows(result)["counters"]
    assert status == "?" and "ran past 1 s" in detail
    assert "`profkit doctor --timeout 2`" in detail and "time limit" not in detail
    assert "==PROF== Connected" in _log_named(detail).read_text()


def test_probe_no_kernels_does_not_blame_a_filter(
    fake_ncu_on_path: Path, gpu: None, monkeypatch
) -> None:
    monkeypatch.setenv("FAKE_NCU_MODE", "no_kernels")
    detail = rows(run_doctor())["counters"][1]
    assert "no filter" in detail and "NVTX" not in detail


def test_probe_crash_keeps_the_log_it_names(fake_ncu_on_path: Path, gpu: None, monkeypatch) -> None:
    monkeypatch.setenv("FAKE_NCU_MODE", "crash")
    detail = rows(run_doctor())["counters"][1]
    assert "signal 11" in detail
    log = _log_named(detail)
    assert "==PROF== Connected" in log.read_text()


def test_probe_success_leaves_no_log(
    fake_ncu_on_path: Path, gpu: None, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("FAKE_NCU_MODE", "ok")
    assert run_doctor().exit_code == 0
    assert not list(tmp_path.glob("profkit-doctor-ncu-*"))


def test_probe_argv_is_unfiltered(fake_ncu_on_path: Path, gpu: None, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("FAKE_NCU_ARGV", str(tmp_path / "argv.json"))
    run_doctor()
    argv = json.loads((tmp_path / "argv.json").read_text())
    assert "--nvtx" not in argv and "--nvtx-include" not in argv


def test_without_torch_exits_2(fake_ncu_on_path: Path, monkeypatch) -> None:
    rows_ = [("torch", False, "not installed: capture needs torch with CUDA")]
    monkeypatch.setattr(doctor, "gpu_checks", lambda: rows_)
    result = run_doctor()
    assert result.exit_code == 2
    verdict = " ".join(result.stdout.split())
    assert "Capture can not run here: torch is not installed" in verdict
    assert "--interpret" not in verdict  # it needs torch too
