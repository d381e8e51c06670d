"""Run Nsight Compute (`ncu`) as a child process and name every way the counter pass fails.

The counter pass never raises for a profiler failure: it returns a CounterPass whose `problem`
names the cause and whose `message` gives the cause and the fix, so the capture keeps its timing
results and records itself as timing only. ncu exits 0 in several failure cases (no kernel
matched, permission denied), so the outcome is read from its printed text, not its exit code
alone. The texts matched here are NVIDIA's, as seen on the project's H200 (see
shared/notes/gpu-facts.md).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from profkit.counters.metrics import DEFAULT_SECTIONS, METRICS

NCU_ENV = "PROFKIT_NCU"
REPORT_SUFFIX = ".ncu-rep"
# profkit's ranges live in the NVTX domain "profkit" and are push/pop ranges: ncu matches a
# push/pop range only when the expression ends in "/" (without it, nothing matches).
NVTX_INCLUDE = "regex:profkit@.+/"
CLOCK_CONTROLS = ("none", "base")
NVIDIA_PARAMS = Path("/proc/driver/nvidia/params")
KILL_GRACE_S = 5.0  # after SIGTERM, how long ncu may take to exit before the group gets SIGKILL
VERSION_TIMEOUT_S = 10.0  # `ncu --version` answers in about a second; longer means it hangs
PROBE_TIMEOUT_S = 60.0  # doctor's probe: one tiny kernel, one metric (ncu's start-up dominates)

PROBLEMS = ("ncu_missing", "no_permission", "no_kernels", "app_failed", "ncu_failed", "timeout")

_PERM_TEXT = "ERR_NVGPUCTRPERM"
_NO_KERNELS_TEXT = "No kernels were profiled"
_APP_FAILED_RE = re.compile(r"==ERROR== The application returned an error code \((-?\d+)\)")
_ERROR_RE = re.compile(r"^==ERROR==\s*(.*)$", re.MULTILINE)
_VERSION_RE = re.compile(r"Version\s+(\d+(?:\.\d+)+)")
_CAP_SYS_ADMIN_BIT = 21  # linux/capability.h

_MISSING_FIX = f"Fix: install Nsight Compute and put `ncu` on PATH, or set {NCU_ENV}=/path/to/ncu."


@dataclass(frozen=True)
class Diagnosis:
    """What one finished ncu run came to: problem None on success, else its name, the reason
    and the fix in words, and the profiled program's exit code where it failed under ncu."""

    problem: str | None
    reason: str
    fix: str = ""
    app_code: int | None = None


_PERMISSION = Diagnosis(
    "no_permission",
    "ncu may not read GPU performance counters on this host (ERR_NVGPUCTRPERM): the driver "
    "restricts profiling to admin users (RmProfilingAdminOnly: 1 in /proc/driver/nvidia/params).",
    "Fix: run as root or with CAP_SYS_ADMIN (in a container: --cap-add=SYS_ADMIN), or set the "
    "driver option NVreg_RestrictProfilingToAdminUsers=0 (modprobe.d, then reload the driver or "
    "reboot); `profkit doctor` checks this host.",
)
_NO_KERNELS = Diagnosis(
    "no_kernels",
    "ncu profiled no kernels: its NVTX filter matched no range of the 'profkit' domain.",
    "Fix: open profkit ranges (push/pop, domain 'profkit', no '/' in the names) around the "
    "kernels; the filter must end in '/' to match push/pop ranges.",
)
_PROBE_PROGRAM = (
    "import torch; x = torch.ones(1, device='cuda'); x.add_(1); torch.cuda.synchronize()"
)


@dataclass
class CounterPass:
    """Outcome of one ncu run; `ok` is False exactly when `problem` is set."""

    ok: bool
    problem: str | None
    reason: str  # the cause (or, on success, what ncu did)
    argv: list[str]
    returncode: int | None
    wall_s: float
    ncu_version: str | None
    report_path: Path | None  # the .ncu-rep file, only when one was written
    metrics: list[str] = field(default_factory=list)
    sections: list[str] = field(default_factory=list)
    set_name: str | None = None
    clock_control: str = "none"
    log_path: Path | None = None
    fix: str = ""  # on a failure, what to do
    app_code: int | None = None  # the profiled program's exit code, where it failed under ncu

    @property
    def message(self) -> str:
        """The cause, and on a failure the fix on a second line."""
        return self.reason + (f"\n{self.fix}" if self.fix else "")

    def diagnosed(self, d: Diagnosis) -> None:
        self.problem, self.reason, self.fix, self.app_code = d.problem, d.reason, d.fix, d.app_code
        self.ok = d.problem is None

    def to_manifest(self) -> dict:
        """The run manifest's `counters` block (docs/tables.md)."""
        return {
            "status": "ok" if self.ok else "timing_only",
            "problem": self.problem,
            "reason": None if self.ok else self.reason,
            "fix": None if self.ok else self.fix or None,
            "report": self.report_path.name if self.report_path else None,
            "ncu_version": self.ncu_version,
            "sections": list(self.sections),
            "metrics": list(self.metrics),
            "set": self.set_name,
            "clock_control": self.clock_control,
            "returncode": self.returncode,
            "wall_s": round(self.wall_s, 3),
        }


@dataclass
class Check:
    """One line of `profkit doctor`: ok is None when it cannot be told."""

    name: str
    ok: bool | None
    detail: str


def find_ncu() -> str | None:
    """The ncu to run: $PROFKIT_NCU if set, else `ncu` on PATH."""
    return os.environ.get(NCU_ENV) or shutil.which("ncu")


def ncu_version(ncu: str, timeout_s: float = VERSION_TIMEOUT_S) -> str | None:
    """ncu's version, e.g. "2025.3.1.0", or None when it cannot be run or read."""
    return inspect_ncu(ncu, timeout_s)[0]


def inspect_ncu(ncu: str, timeout_s: float = VERSION_TIMEOUT_S) -> tuple[str | None, str | None]:
    """(version, None) when `ncu --version` answers like Nsight Compute, else (None, why not).

    The call runs in its own process group and the whole group is stopped at the time limit: a
    hung ncu leaves no orphan behind."""
    path = Path(ncu)
    if not path.exists() and shutil.which(ncu) is None:
        return None, f"{ncu}: no such file. {_MISSING_FIX}"
    if path.is_dir():
        return None, f"{ncu} is a directory, not the ncu program. {_MISSING_FIX}"
    if path.exists() and not os.access(path, os.X_OK):
        return None, f"{ncu} is not executable (chmod +x it, or point {NCU_ENV} at ncu itself)"
    try:
        returncode, output, timed_out, _ = _run_logged([ncu, "--version"], timeout_s, None)
    except OSError as err:
        return None, f"{ncu} cannot be run ({err.strerror}). {_MISSING_FIX}"
    if timed_out:
        return None, (
            f"{ncu} did not answer `--version` within {timeout_s:g} s and was stopped "
            "(with its process group): a hung or very slow ncu"
        )
    found = _VERSION_RE.search(output)
    if found and returncode == 0:
        return found.group(1), None
    said = next((line.strip() for line in output.splitlines() if line.strip()), "nothing")
    return None, (
        f"{ncu} does not answer `--version` like Nsight Compute (exit {returncode}, said: "
        f"{said[:80]!r}). {_MISSING_FIX}"
    )


def report_file(report_path: Path) -> Path:
    """The .ncu-rep file ncu writes for `report_path` (given with or without the suffix)."""
    report_path = Path(report_path)
    if report_path.name.endswith(REPORT_SUFFIX):
        return report_path
    return report_path.with_name(report_path.name + REPORT_SUFFIX)


def _report_base(report_path: Path) -> Path:
    file = report_file(report_path)
    return file.with_name(file.name[: -len(REPORT_SUFFIX)])


def build_argv(
    ncu: str,
    report_path: Path,
    program: Sequence[str],
    *,
    metrics: Sequence[str] | None = None,
    sections: Sequence[str] | None = None,
    set_name: str | None = None,
    clock_control: str = "none",
    nvtx_include: str | None = NVTX_INCLUDE,
    extra_args: Sequence[str] = (),
) -> list[str]:
    """The ncu command line, program last.

    metrics=None means the curated set; sections=None means DEFAULT_SECTIONS, or none when
    set_name is given (the set already picks its sections). nvtx_include=None drops the filter.
    """
    if clock_control not in CLOCK_CONTROLS:
        raise ValueError(f"clock_control must be one of {CLOCK_CONTROLS}, not {clock_control!r}")
    argv = [ncu]
    if nvtx_include is not None:
        argv += ["--nvtx", "--nvtx-include", nvtx_include]
    argv += ["--replay-mode", "kernel", "--clock-control", clock_control, "--cache-control", "all"]
    names = _metric_names(metrics)
    if names:
        argv += ["--metrics", ",".join(names)]
    for section in _section_names(sections, set_name):
        argv += ["--section", section]
    if set_name:
        argv += ["--set", set_name]
    argv += list(extra_args)
    argv += ["-f", "-o", str(_report_base(report_path))]
    return argv + list(program)


def _metric_names(metrics: Sequence[str] | None) -> list[str]:
    return [m.ncu for m in METRICS] if metrics is None else list(metrics)


def _section_names(sections: Sequence[str] | None, set_name: str | None) -> list[str]:
    if sections is not None:
        return list(sections)
    return [] if set_name else list(DEFAULT_SECTIONS)


def classify(
    returncode: int | None,
    output_text: str,
    report_exists: bool,
    timed_out: bool,
    *,
    timeout_s: float | None = None,
    log_path: Path | None = None,
) -> Diagnosis:
    """What one finished ncu run came to; its problem is None on success.

    Checked in order of what explains the most: a permission error also ends with no kernels
    profiled, and a failing program may leave ncu with nothing to profile.
    """
    log = f" (log: {log_path})" if log_path else ""
    if timed_out:
        limit = f" of {timeout_s:g} s" if timeout_s is not None else ""
        return Diagnosis(
            "timeout",
            f"ncu ran past its time limit{limit} and was stopped with its whole process group.",
            f"Fix: profile fewer cases or metrics, or raise --ncu-timeout{log}.",
        )
    if _PERM_TEXT in output_text:
        return _PERMISSION
    app_failed = _APP_FAILED_RE.search(output_text)
    if app_failed:
        code = int(app_failed.group(1))
        return Diagnosis(
            "app_failed",
            f"The profiled program failed under ncu (error code {code}).",
            f"Fix: read the program's output in the ncu log{log} and run it alone to debug it.",
            code,
        )
    if _NO_KERNELS_TEXT in output_text:
        return _NO_KERNELS
    cause = _ncu_failure(returncode, output_text, report_exists)
    if cause:
        return Diagnosis(
            "ncu_failed",
            f"{cause}.",
            f"Fix: read the ncu log{log} and rerun the same ncu command by hand; "
            "`profkit doctor` checks this host.",
        )
    return Diagnosis(None, "ncu wrote its report.")


def _ncu_failure(returncode: int | None, output_text: str, report_exists: bool) -> str | None:
    """Why ncu itself failed, or None when it did not."""
    if returncode is not None and returncode < 0:
        return f"ncu was killed by signal {-returncode}"
    error = _ERROR_RE.search(output_text)
    if error:
        return f"ncu failed: {error.group(1).strip()}"
    if returncode:
        return f"ncu exited with code {returncode}"
    if not report_exists:
        return "ncu exited without writing its report"
    return None


def metrics_na_message(names: Sequence[str]) -> str:
    """The note for metrics ncu printed as n/a (found later, in the report)."""
    return (
        f"ncu reported {len(names)} metric(s) as n/a (not supported on this GPU or unknown): "
        f"{', '.join(names)}; their columns stay empty"
    )


def run_counter_pass(
    program: Sequence[str],
    report_path: Path,
    *,
    timeout_s: float = 1800,
    log_path: Path | None = None,
    **argv_options,
) -> CounterPass:
    """Run `program` under ncu, writing a .ncu-rep at report_path; never raises on ncu failures.

    argv_options go to build_argv (metrics, sections, set_name, clock_control, nvtx_include,
    extra_args). ncu's stdout and stderr go, combined, to log_path when given.
    """
    report = report_file(report_path)
    ncu = find_ncu()
    argv = build_argv(ncu or "ncu", report, program, **argv_options)
    result = CounterPass(
        ok=False,
        problem=None,
        reason="",
        argv=argv,
        returncode=None,
        wall_s=0.0,
        ncu_version=None,
        report_path=None,
        metrics=_metric_names(argv_options.get("metrics")),
        sections=_section_names(argv_options.get("sections"), argv_options.get("set_name")),
        set_name=argv_options.get("set_name"),
        clock_control=argv_options.get("clock_control", "none"),
        log_path=log_path,
    )
    if ncu is None:
        reason = f"Nsight Compute's `ncu` was not found on PATH ({NCU_ENV} is unset)."
        result.diagnosed(Diagnosis("ncu_missing", reason, _MISSING_FIX))
        return result
    # A report left by an earlier run must not pass for this run's.
    report.unlink(missing_ok=True)
    result.ncu_version = ncu_version(ncu)
    try:
        returncode, output, timed_out, result.wall_s = _run_logged(argv, timeout_s, log_path)
    except OSError as err:
        reason = f"Cannot run ncu at {ncu!r} ({err.strerror})."
        result.diagnosed(Diagnosis("ncu_missing", reason, _MISSING_FIX))
        return result
    result.returncode = returncode
    exists = report.is_file() and report.stat().st_size > 0
    result.report_path = report if exists else None
    result.diagnosed(
        classify(returncode, output, exists, timed_out, timeout_s=timeout_s, log_path=log_path)
    )
    return result


def _run_logged(
    argv: list[str], timeout_s: float, log_path: Path | None
) -> tuple[int | None, str, bool, float]:
    """Run argv in its own process group; (returncode, output, timed_out, wall_s)."""
    with _log_file(log_path) as log:
        start = time.monotonic()
        # Its own session, so a timeout can kill ncu together with the program it launched.
        proc = subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        timed_out = False
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc)
        except BaseException:  # Ctrl-C: its own session gets no SIGINT from the terminal
            _kill_group(proc)
            raise
        wall_s = time.monotonic() - start
        log.flush()
        log.seek(0)
        output = log.read().decode(errors="replace")
    return (None if timed_out else proc.returncode), output, timed_out, wall_s


def _log_file(log_path: Path | None) -> IO[bytes]:
    if log_path is None:
        return tempfile.TemporaryFile()
    Path(log_path).parent.mkdir(parents=True, exist_ok=True)
    return open(log_path, "w+b")  # closed by the caller's `with`


def _kill_group(proc: subprocess.Popen) -> None:
    """SIGTERM the process group so ncu can stop its program, then SIGKILL what is left."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=KILL_GRACE_S)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def counter_access(
    params_path: Path = NVIDIA_PARAMS,
    ncu: str | None = None,
    timeout_s: float = PROBE_TIMEOUT_S,
    status_path: Path = Path("/proc/self/status"),
    probe: bool = True,
    gpu_visible: bool = True,
    say: Callable[[str], None] = lambda line: None,
) -> list[Check]:
    """Doctor checks: is ncu there, does the driver allow counters, and can ncu read one here.

    The probe runs only where it can tell something: with a GPU visible and an ncu that answers.
    `say` is told before each step that may take seconds."""
    ncu = ncu or find_ncu()
    version_limit = min(timeout_s, VERSION_TIMEOUT_S)
    if ncu is not None:
        say(f"checking ncu: `{ncu} --version` (up to {version_limit:g} s) ...")
    ncu_row = _ncu_check(ncu, version_limit)
    driver = _driver_check(params_path, status_path)
    found = [ncu_row, driver]
    if not probe:
        return found
    if not ncu_row.ok:
        return [*found, Check("counters", None, "not probed: no working ncu (see the ncu row)")]
    if not gpu_visible:
        reason = "not probed: no CUDA GPU visible (the probe profiles one tiny CUDA kernel)"
        return [*found, Check("counters", None, reason)]
    say(f"probing counters: ncu profiles one tiny CUDA kernel (up to {timeout_s:g} s) ...")
    return [*found, _probe_check(ncu, timeout_s, driver_says_restricted=driver.detail[:1] == "1")]


def _ncu_check(ncu: str | None, timeout_s: float = VERSION_TIMEOUT_S) -> Check:
    if ncu is None:
        return Check("ncu", False, f"not found on PATH and {NCU_ENV} is unset. {_MISSING_FIX}")
    version, problem = inspect_ncu(ncu, timeout_s)
    if version is None:
        return Check("ncu", False, problem or f"{ncu} is not usable")
    return Check("ncu", True, f"{ncu} (Nsight Compute {version})")


def _driver_check(params_path: Path, status_path: Path) -> Check:
    name = "RmProfilingAdminOnly"
    value = _read_params(params_path).get(name)
    if value is None:
        return Check(name, None, f"not found in {params_path} (no NVIDIA driver on this host?)")
    if value == "0":
        return Check(name, True, "0: GPU counters are open to all users")
    admin = _has_cap_sys_admin(status_path)
    if admin:
        return Check(
            name, True, f"{value}: counters need admin rights, and this process has CAP_SYS_ADMIN"
        )
    has = "lacks" if admin is False else "may lack"
    return Check(
        name,
        False if admin is False else None,
        f"{value}: counters are restricted to admin users and this process {has} "
        "CAP_SYS_ADMIN. Fix: run as root (in a container: --cap-add=SYS_ADMIN), or set "
        "NVreg_RestrictProfilingToAdminUsers=0 and reload the driver or reboot",
    )


def _read_params(params_path: Path) -> dict[str, str]:
    try:
        text = Path(params_path).read_text()
    except OSError:
        return {}
    pairs = (line.partition(":") for line in text.splitlines())
    return {key.strip(): value.strip() for key, sep, value in pairs if sep}


def _has_cap_sys_admin(status_path: Path) -> bool | None:
    caps = _read_params(status_path).get("CapEff")
    if caps is None:
        return None
    return bool(int(caps, 16) >> _CAP_SYS_ADMIN_BIT & 1)


def _probe_check(ncu: str, timeout_s: float, driver_says_restricted: bool = False) -> Check:
    """Profile one tiny CUDA kernel with one metric and say whether counters came back; a failed
    probe keeps its ncu log (and names it), a successful one removes it."""
    name = "counters"
    fd, log_name = tempfile.mkstemp(prefix="profkit-doctor-ncu-", suffix=".log")
    os.close(fd)
    log = Path(log_name)
    with tempfile.TemporaryDirectory(prefix="profkit-probe-") as tmp:
        report = Path(tmp) / "probe"
        argv = build_argv(
            ncu,
            report,
            [sys.executable, "-c", _PROBE_PROGRAM],
            metrics=["gpu__time_duration.sum"],
            sections=[],
            nvtx_include=None,
            extra_args=["-c", "1"],
        )
        try:
            returncode, output, timed_out, _ = _run_logged(argv, timeout_s, log)
        except OSError as err:
            log.unlink(missing_ok=True)
            return Check(name, None, f"unknown: cannot run ncu at {ncu!r} ({err.strerror})")
        exists = report_file(report).is_file()
        diagnosis = classify(returncode, output, exists, timed_out, timeout_s=timeout_s)
    problem = diagnosis.problem
    if problem is None:
        log.unlink(missing_ok=True)
        return Check(name, True, "yes: ncu read a GPU counter on this host")
    if problem == "no_permission":
        log.unlink(missing_ok=True)
        as_row = ", as the RmProfilingAdminOnly row says" if driver_says_restricted else ""
        return Check(name, False, f"no: {_PROBE_PERMISSION.format(as_row=as_row)}")
    detail = {
        "timeout": (
            f"the probe ran past {timeout_s:g} s and was stopped (with its process group); on a "
            f"slow or busy host, give it longer: `profkit doctor --timeout {2 * timeout_s:g}`"
        ),
        "no_kernels": (
            "ncu profiled no kernel of the probe program, which launches one CUDA kernel under "
            "no filter: this ncu may not support this GPU or driver"
        ),
        "app_failed": (
            "the probe program failed under ncu (it needs torch with CUDA and a visible GPU); "
            f'run it alone to see why: python -c "{_PROBE_PROGRAM}"'
        ),
    }.get(problem, diagnosis.reason.rstrip("."))
    return Check(name, None, f"unknown ({problem}): {detail}. ncu's output: {log}")


_PROBE_PERMISSION = (
    "ncu may not read GPU performance counters on this host (ERR_NVGPUCTRPERM){as_row}. Fix: run "
    "as root or with CAP_SYS_ADMIN (in a container: --cap-add=SYS_ADMIN), or set the driver "
    "option NVreg_RestrictProfilingToAdminUsers=0 (modprobe.d, then reload the driver or reboot)"
)
