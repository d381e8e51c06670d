"""The repository's house rules, checked where CI runs them: the wheel a user installs works
(tests/wheel_check.sh: every subpackage shipped, `profkit list` and `profkit explain` from a fresh
venv), the README's test command works inside a venv, ruff is clean, and the tracked files stay
small."""

from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TRACKED_LIMIT = 15_000_000  # bytes (issue 21): runs and pages stay out of git
# in the venv: the unit tier of this file, whose wheel check makes a nested venv and runs profkit
# from it (where a venv differs from the system Python); not this test itself, nor ruff (a lint of
# the tree, the same from any environment)
IN_VENV = "-m unit tests/test_packaging.py -k 'not fresh_venv and not ruff'"
PURELIB = "import sysconfig; print(sysconfig.get_path('purelib'))"


@pytest.mark.slow
@pytest.mark.skipif(
    not os.environ.get("VIRTUAL_ENV"),
    reason="outside a venv it runs inside test_the_readme_test_command_passes_in_a_fresh_venv",
)
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


@pytest.mark.slow
def test_the_readme_test_command_passes_in_a_fresh_venv(tmp_path: Path) -> None:
    """Issue 35: a user runs the README's test command inside a venv, whose packages are the
    venv's own, not the base interpreter's. The venv here holds this interpreter's packages as
    links in its own site-packages (offline and instant, as if installed there); the command runs
    install.sh (a no-op when all is in place), then the unit tier of this file: the wheel check
    (it failed in a venv: its nested venv saw the base interpreter's packages, not the venv's)."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    purelib = subprocess.run([str(venv / "bin" / "python"), "-c", PURELIB], capture_output=True,
                             text=True, check=True).stdout.strip()  # fmt: skip
    for folder in dict.fromkeys(site.getsitepackages()):
        for entry in Path(folder).iterdir():
            if not (Path(purelib) / entry.name).exists():
                (Path(purelib) / entry.name).symlink_to(entry)
    env = {**os.environ, "VIRTUAL_ENV": str(venv), "PATH": f"{venv / 'bin'}:{os.environ['PATH']}"}
    env.pop("PYTHONPATH", None)
    command = "bash tests/install.sh && python3 -m pytest -q -n0 -p no:cacheprovider " + IN_VENV
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    # the wheel check ran there (this interpreter's own run skips it outside a venv)
    assert " passed" in done.stdout and " failed" not in done.stdout
    assert "skipped" not in done.stdout, done.stdout[-2000:]
