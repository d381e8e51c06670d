"""Run a device job described by a job file (jobs/*.toml): its steps are shell commands, run in
order in the background so that the job outlives one device call; each call waits up to --wait
seconds, then packs what finished since the last call into OUT/batch.tar.

    python3 jobs/run.py jobs/lab.toml                   # start, or wait and collect
    python3 jobs/run.py jobs/lab.toml --steps sum,matmul
    python3 jobs/run.py jobs/lab.toml --foreground      # run here, to the end (no GPU: a dry run)

A job file:

    description = "what the job measures"
    [[step]]
    name = "sum"                                          # letters, digits, _ and -
    run = "python3 -m profkit capture sum --out $RUNS"    # bash; $JOB, $RUNS, $OUT are set
    outputs = ["sum-extra"]                               # paths under $JOB to send back

Runs stored under $RUNS come back as tables (the raw counters.ncu-rep xz-compressed beside them),
each step's log and {rc, wall_s} too; a batch over 15 MB is split in parts (batch.tar.partNN).
Wheels under .whl/ (the device has no network) are installed into /tmp/site first, put first on
PYTHONPATH with the checkout after it.
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

PART = 15_000_000  # the device tool's limit on one file sent back
NAME = re.compile(r"^[A-Za-z0-9_-]+$")


class JobError(Exception):
    """A job file or a call that cannot run: one line, exit 2."""


def read_job(path: Path) -> dict:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        job = tomllib.loads(path.read_text())
    except OSError as exc:
        raise JobError(f"cannot read {path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise JobError(f"{path} is not valid TOML: {exc}") from None
    steps = job.get("step")
    if not isinstance(steps, list) or not steps:
        raise JobError(f"{path} has no [[step]]")
    seen = set()
    for i, step in enumerate(steps):
        name, run = step.get("name"), step.get("run")
        if not isinstance(name, str) or not NAME.match(name) or name in seen:
            raise JobError(f"{path}: step {i + 1} needs a unique name of letters, digits, _ and -")
        if not isinstance(run, str) or not run.strip():
            raise JobError(f"{path}: step {name!r} has no run command")
        if not all(isinstance(o, str) for o in step.get("outputs", [])):
            raise JobError(f"{path}: step {name!r}: outputs must be a list of paths")
        seen.add(name)
    return job


def pick(job: dict, wanted: str | None) -> list[dict]:
    if not wanted:
        return job["step"]
    by_name = {s["name"]: s for s in job["step"]}
    names = [n for n in wanted.split(",") if n]
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise JobError(f"no step {', '.join(unknown)}; the job's steps: {', '.join(by_name)}")
    return [by_name[n] for n in names]


def environment(folder: Path, out: Path) -> dict[str, str]:
    env = dict(os.environ, JOB=str(folder), RUNS=str(folder / "runs"), OUT=str(out))
    env["PYTHONUNBUFFERED"] = "1"
    site = "/tmp/site" if Path("/tmp/site").is_dir() else None
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (site, os.getcwd(), os.environ.get("PYTHONPATH")) if p
    )
    return env


def install_wheels() -> None:
    wheels = sorted(Path(".whl").glob("*.whl"))
    if wheels:
        pip = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps"]
        pip += ["--no-compile", "--no-cache-dir", "--upgrade", "--target", "/tmp/site"]
        subprocess.run([*pip, *map(str, wheels)], check=True)


def run_iterations(steps: list[dict], folder: Path, out: Path) -> None:
    """Each step in turn; its output to NAME.log, its exit status and wall time to NAME.json."""
    env = environment(folder, out)
    for step in steps:
        name = step["name"]
        start = time.monotonic()
        with (folder / f"{name}.log").open("w") as log:
            rc = subprocess.run(
                ["bash", "-c", step["run"]], stdout=log, stderr=subprocess.STDOUT, env=env
            ).returncode
        status = {"rc": rc, "wall_s": round(time.monotonic() - start, 1)}
        (folder / f"{name}.json").write_text(json.dumps(status))
    (folder / "finished").write_text("")


def pack(steps: list[dict], folder: Path, out: Path) -> list[Path]:
    """What finished and was not sent yet -> OUT/batch.tar (or its parts)."""
    staging = folder / ".pack"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    runs = folder / "runs"
    for run in sorted(runs.iterdir()) if runs.is_dir() else []:
        sent = folder / f".sent-{run.name}"
        if not (run / "manifest.json").is_file() or run.name.startswith(".") or sent.exists():
            continue
        dest = staging / "runs" / run.name
        shutil.copytree(run, dest, ignore=shutil.ignore_patterns("*.ncu-rep"))
        for report in run.glob("*.ncu-rep"):
            with report.open("rb") as src, lzma.open(dest / f"{report.name}.xz", "wb") as dst:
                shutil.copyfileobj(src, dst)
        sent.write_text("")
    for step in steps:
        for name in (f"{step['name']}.log", f"{step['name']}.json", *step.get("outputs", [])):
            src = folder / name
            if src.is_dir():
                shutil.copytree(src, staging / name, dirs_exist_ok=True)
            elif src.is_file():
                (staging / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, staging / name)
    out.mkdir(parents=True, exist_ok=True)
    batch = folder / "batch.tar"
    with tarfile.open(batch, "w") as tar:
        for item in sorted(staging.iterdir()):
            tar.add(item, arcname=item.name)
    shutil.rmtree(staging)
    if batch.stat().st_size <= PART:
        return [Path(shutil.copy2(batch, out / "batch.tar"))]
    parts, data = [], batch.read_bytes()
    for i in range(0, len(data), PART):
        parts.append(out / f"batch.tar.part{i // PART:02d}")
        parts[-1].write_bytes(data[i : i + PART])
    return parts


def report(steps: list[dict], folder: Path, sent: list[Path]) -> None:
    for step in steps:
        status = folder / f"{step['name']}.json"
        if status.is_file():
            s = json.loads(status.read_text())
            print(f"{step['name']}: rc {s['rc']}, {s['wall_s']} s")
        else:
            print(f"{step['name']}: not finished")
    print("sent: " + ", ".join(p.name for p in sent))
    print("job finished" if (folder / "finished").exists() else "job still running")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("job", type=Path, help="a job file, e.g. jobs/lab.toml")
    ap.add_argument("--steps", help="comma-separated step names, in the order to run them")
    ap.add_argument("--wait", type=float, default=540, help="seconds to wait in this call")
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "out")))
    ap.add_argument("--folder", type=Path, help="the job's folder [default: /tmp/job-NAME]")
    ap.add_argument("--foreground", action="store_true", help="run every step here, then pack")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    try:
        job = read_job(args.job)
        steps = pick(job, args.steps)
    except JobError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    folder = (args.folder or Path(f"/tmp/job-{args.job.stem}")).resolve()
    out = args.out.resolve()
    if args.worker:
        run_iterations(steps, folder, out)
        return 0
    if not folder.is_dir():
        (folder / "runs").mkdir(parents=True)
        install_wheels()
        if args.foreground:
            run_iterations(steps, folder, out)
        else:
            worker = [sys.executable, os.path.abspath(__file__), str(args.job), "--worker"]
            worker += ["--folder", str(folder), "--out", str(out)]
            worker += ["--steps", ",".join(s["name"] for s in steps)]
            with (folder / "job.log").open("w") as log:
                subprocess.Popen(worker, stdout=log, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
            print(f"job started in {folder}")
    deadline = time.monotonic() + args.wait
    while not (folder / "finished").exists() and time.monotonic() < deadline:
        time.sleep(2)
    report(steps, folder, pack(steps, folder, out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
