"""The repository's house rules, checked where CI runs them: the wheel a user installs works
(tests/wheel_check.sh: every subpackage shipped, `profkit list` and `profkit explain` from a fresh
venv), ruff is clean, and the tracked files stay small."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TRACKED_LIMIT = 15_000_000  # bytes (issue 21): runs and pages stay out of git


@pytest.mark.slow
def test_the_installed_wheel_ships_every_package_and_runs() -> None:
    done = subprocess.run(["bash", str(ROOT / "tests" / "wheel_check.sh")], capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ran from the installed wheel" in done.stdout


@pytest.mark.parametrize("args", [["check"], ["format", "--check"]], ids=["check", "format"])
def test_ruff_is_clean(args: list[str]) -> None:
    ruff = shutil.which("ruff")
    assert ruff, "ruff is missing: run `bash tests/install.sh`"
    done = subprocess.run([ruff, *args, "."], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-1000:]


def test_tracked_files_stay_under_15_mb() -> None:
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    listed = subprocess.run(["git", "ls-files", "-z"], capture_output=True, cwd=ROOT, check=True)
    files = [ROOT / f for f in listed.stdout.decode().split("\0") if f]
    total = sum(f.stat().st_size for f in files if f.is_file())
    assert total <= TRACKED_LIMIT, f"tracked files hold {total / 1e6:.1f} MB"
