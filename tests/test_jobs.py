"""jobs/run.py, the device-job runner, off the GPU: a job file's steps run in order with their logs
and exit status, a stored run comes back as tables with its report compressed, bad job files are
one-line errors; and every job file in jobs/ parses."""

from __future__ import annotations

import json
import lzma
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RUNNER = ROOT / "jobs" / "run.py"

JOB = """
description = "a dry run"
[[step]]
name = "store"
run = '''mkdir -p $RUNS/k-1 && echo '{"run_id": "k-1"}' > $RUNS/k-1/manifest.json
printf raw > $RUNS/k-1/counters.ncu-rep && mkdir -p $JOB/extra && echo x > $JOB/extra/a.txt'''
outputs = ["extra"]
[[step]]
name = "fails"
run = "echo broken; exit 3"
"""


def run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(RUNNER), *args], capture_output=True, text=True,
                          cwd=cwd, timeout=60)  # fmt: skip


def test_a_job_runs_its_steps_and_sends_back_runs_logs_and_outputs(tmp_path: Path) -> None:
    job = tmp_path / "dry.toml"
    job.write_text(JOB)
    out, folder = tmp_path / "out", tmp_path / "job"
    done = run(str(job), "--foreground", "--out", str(out), "--folder", str(folder), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "store: rc 0" in done.stdout and "fails: rc 3" in done.stdout
    assert done.stdout.strip().endswith("job finished")
    with tarfile.open(out / "batch.tar") as tar:
        names = set(tar.getnames())
        assert {"runs/k-1/manifest.json", "runs/k-1/counters.ncu-rep.xz", "extra/a.txt"} <= names
        assert "runs/k-1/counters.ncu-rep" not in names  # raw reports travel compressed
        assert tar.extractfile("fails.log").read() == b"broken\n"
        assert json.loads(tar.extractfile("fails.json").read())["rc"] == 3
        assert lzma.decompress(tar.extractfile("runs/k-1/counters.ncu-rep.xz").read()) == b"raw"
    # a later call sends only what is new: the run went out already
    again = run(str(job), "--out", str(out), "--folder", str(folder), "--wait", "0")
    with tarfile.open(out / "batch.tar") as tar:
        assert not [n for n in tar.getnames() if n.startswith("runs")]
    assert again.stdout.strip().endswith("job finished")


@pytest.mark.parametrize(
    "text,error",
    [
        ("description = 'x'", "has no [[step]]"),
        ("[[step]]\nname = 'a b'\nrun = 'true'", "unique name"),
        ("[[step]]\nname = 'a'", "has no run command"),
        ("[[step", "not valid TOML"),
    ],
)
def test_a_bad_job_file_is_a_one_line_error(tmp_path: Path, text: str, error: str) -> None:
    job = tmp_path / "bad.toml"
    job.write_text(text)
    done = run(str(job), "--foreground", "--folder", str(tmp_path / "j"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("error: ") and error in line


def test_an_unknown_step_names_the_jobs_steps(tmp_path: Path) -> None:
    job = tmp_path / "dry.toml"
    job.write_text(JOB)
    done = run(str(job), "--steps", "nope", "--folder", str(tmp_path / "j"))
    assert done.returncode == 2
    assert done.stderr.strip() == "error: no step nope; the job's steps: store, fails"


@pytest.mark.parametrize("job", sorted((ROOT / "jobs").glob("*.toml")), ids=lambda p: p.stem)
def test_every_job_file_parses(job: Path) -> None:
    sys.path.insert(0, str(RUNNER.parent))
    try:
        import run as runner
    finally:
        sys.path.remove(str(RUNNER.parent))
    steps = runner.read_job(job)["step"]
    assert steps and all(s["run"].strip() for s in steps)
