"""Run directories under profiles/: written atomically, read back without GPU or torch.

A run is written into a hidden temp directory and renamed into place only once complete, so an
interrupted capture never leaves a directory that looks like a finished run, and a failed one never
touches runs already stored.
"""

from __future__ import annotations

import errno
import json
import os
import secrets
import shutil
import socket
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from profkit.errors import ProfkitError

# 2: device time by CUDA-graph replay (device_* columns), host cost, eager-loop time, clocks,
#    raw samples in samples.csv.gz. 1: event time around each call, stored as p50_ms etc.
SCHEMA = 2
MANIFEST = "manifest.json"
CASES = "cases.csv"
KERNELS = "kernels.csv"
RULES = "rules.csv"
SAMPLES = "samples.csv.gz"  # raw timing samples: case, kind (device|host|loop), ms
REPORT = "counters.ncu-rep"
SOURCE_REPORT = "source.ncu-rep"  # the --source pass's report (SourceCounters, imported source)
SOURCE_LINES = "source_lines.csv"  # its per-line table (profkit.sourcelines)
TMP_PREFIX = ".tmp-"


# the README's example run (an H200 capture, tables only), shipped in the package so that a fresh
# clone or a plain `pip install` has a run to read before the user captures one
EXAMPLES = Path(__file__).resolve().parent / "examples"


def default_root() -> Path:
    """profiles/ in the working directory, unless PROFKIT_PROFILES points elsewhere."""
    return Path(os.environ.get("PROFKIT_PROFILES", "profiles"))


def reading_root(root: Path | None = None) -> tuple[Path, bool]:
    """Where readers look for runs -> (folder, is_example): root when given (--profiles), else the
    default folder; when that holds no run and was not chosen (no PROFKIT_PROFILES), the example
    runs shipped in the package, so that the caller can say it reads an example."""
    if root is not None:
        return root, False
    root = default_root()
    if "PROFKIT_PROFILES" in os.environ or list_runs(root) or not list_runs(EXAMPLES):
        return root, False
    return EXAMPLES, True


@dataclass
class Run:
    path: Path
    manifest: dict
    cases: pd.DataFrame
    kernels: pd.DataFrame | None = None
    rules: pd.DataFrame | None = None
    samples: pd.DataFrame | None = None  # None for schema-1 runs: they stored no samples
    # what was wrong with an optional file that was left out (one line each, for stderr)
    warnings: list[str] = field(default_factory=list)
    source_lines: pd.DataFrame | None = None  # per-line counters of a --source capture

    @property
    def run_id(self) -> str:
        return self.manifest["run_id"]

    @property
    def timing_only(self) -> bool:
        return self.manifest.get("counters", {}).get("status") != "ok"

    @property
    def interpret(self) -> bool:
        """A correctness run through Triton's interpreter: nothing in it was timed."""
        return is_interpret(self.manifest)


def is_interpret(manifest: dict) -> bool:
    return manifest.get("mode") == "interpret"


def new_run_id(kernel: str, now: datetime | None = None) -> str:
    """kernel-YYYYmmdd-HHMMSS-host-xxxxxx: sortable by time, and the random tail keeps runs started
    in the same second on the same host apart (the rename in `finish` is the final guard)."""
    now = now or datetime.now(timezone.utc)
    host = socket.gethostname().split(".")[0][:16] or "host"
    return f"{kernel}-{now:%Y%m%d-%H%M%S}-{host}-{secrets.token_hex(3)}"


@dataclass
class RunWriter:
    """Collects a run's files in a temp directory; `finish` renames it into place."""

    root: Path
    kernel: str
    run_id: str = ""
    tmp: Path = field(init=False)

    def __post_init__(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.run_id = self.run_id or new_run_id(self.kernel)
        self.tmp = self.root / f"{TMP_PREFIX}{self.run_id}"
        self.tmp.mkdir()

    def path(self, name: str) -> Path:
        return self.tmp / name

    def write_table(self, name: str, df: pd.DataFrame) -> None:
        df.to_csv(self.tmp / name, index=False)

    def write_samples(self, df: pd.DataFrame) -> None:
        """Raw samples, compressed; 6 significant digits keep nanoseconds of a millisecond."""
        df.to_csv(self.tmp / SAMPLES, index=False, float_format="%.6g", compression="gzip")

    def finish(self, manifest: dict) -> Path:
        """Write the manifest last, then rename the directory into place; never overwrite a run."""
        while True:
            final = self.root / self.run_id
            body = {"schema": SCHEMA, **manifest, "run_id": self.run_id, "complete": True}
            (self.tmp / MANIFEST).write_text(json.dumps(body, indent=2) + "\n")
            if not final.exists():
                try:
                    os.rename(self.tmp, final)  # atomic; fails if another run took the name
                    return final
                except OSError as exc:
                    if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                        raise ProfkitError(f"could not store run {self.run_id}: {exc}") from exc
            self.run_id = f"{self.run_id}-{secrets.token_hex(2)}"

    def abandon(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)


def _manifest(path: Path) -> dict | None:
    """A finished run's manifest, or None when path holds no finished run."""
    try:
        manifest = json.loads((path / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    return manifest if isinstance(manifest, dict) and manifest.get("complete") is True else None


def is_run(path: Path) -> bool:
    return _manifest(path) is not None


def list_runs(root: Path | None = None, interpret: bool = True) -> list[Path]:
    """Finished runs under root, oldest first (by the manifest's creation time); interpret=False
    leaves out correctness runs made through Triton's interpreter."""
    root = root or default_root()
    if not root.is_dir():
        return []
    found = []
    for p in root.iterdir():
        manifest = _manifest(p) if p.is_dir() and not p.name.startswith(".") else None
        if manifest is not None and (interpret or not is_interpret(manifest)):
            found.append((str(manifest.get("created", "")), p.name, p))
    return [p for _, _, p in sorted(found)]


def resolve(ref: str | None, root: Path | None = None) -> Path:
    """A run directory from a path, a run id under root, a kernel's name (its newest GPU run
    under root), or (None) the newest GPU run under root.

    An interpret run (correctness only, nothing timed) is never the default: it is read only when
    named, so a quick `capture --interpret` does not hide the stored GPU runs."""
    root = root or default_root()
    if ref is None:
        runs = list_runs(root, interpret=False)
        if runs:
            return runs[-1]
        checks = list_runs(root)
        if checks:
            raise ProfkitError(
                f"no GPU runs stored under {root}/, only {len(checks)} interpret run(s) "
                f"(correctness only): name one, e.g. {checks[-1].name}"
            )
        raise ProfkitError(
            f"no runs stored under {root}/: capture one with `profkit capture KERNEL`"
        )
    for candidate in (Path(ref), root / ref):
        if candidate.is_dir():
            if is_run(candidate):
                return candidate
            raise ProfkitError(f"{candidate} is not a profkit run (no complete {MANIFEST})")
    of_kernel = [p for p in list_runs(root, interpret=False) if _manifest(p).get("kernel") == ref]
    if of_kernel:
        return of_kernel[-1]
    raise ProfkitError(
        f"no run named {ref!r} (looked for a directory, a run id and a kernel's runs under {root}/)"
    )


# what every reader of a run relies on; a run missing these is damaged
REQUIRED_CASE_COLUMNS = ("kernel", "variant", "dtype", "shape", "correct", "device_p50_ms")
# schema 1 timed each call with events around it (the host inside the window at small shapes);
# its columns are read under the new names, with device_method saying how they were measured
_SCHEMA1_COLUMNS = {
    "reps": "device_reps",
    "p50_ms": "device_p50_ms",
    "p95_ms": "device_p95_ms",
    "p5_ms": "device_p5_ms",
    "spread_ms": "device_iqr_ms",
}
SCHEMA2_ONLY = ("device_overhead_us", "host_us", "loop_us", "sm_clock_mhz", "mem_clock_mhz")
# a sweep of 1-D shapes ("16777216") would otherwise come back as integers and stop matching the
# manifest's shape strings and other runs' shapes
TEXT_COLUMNS = {"shape": str}
SCHEMA1_METHOD = "events (schema 1: event window around the Python call)"


# step-latency runs (decode) stored before the step_* columns kept a step's latency (host included)
# under the device_* names; device_p99_ms marks them. Read under the step_* names, device_* empty.
_STEP_COLUMNS = {
    "device_reps": "step_reps",
    "device_p50_ms": "step_p50_ms",
    "device_p95_ms": "step_p95_ms",
    "device_p99_ms": "step_p99_ms",
    "device_p5_ms": "step_p5_ms",
    "device_iqr_ms": "step_iqr_ms",
    "device_p95_over_p50": "step_p95_over_p50",
    "device_method": "step_method",
    "device_note": "step_note",
}
_EMPTY_IN_STEP_RUNS = ("device_p50_ms", "device_p95_ms", "device_p5_ms", "device_iqr_ms")


def upgrade(manifest: dict, cases: pd.DataFrame) -> pd.DataFrame:
    """A run stored by an earlier schema (or layout), read as the current one."""
    if "device_p99_ms" in cases.columns and "step_p50_ms" not in cases.columns:
        cases = cases.rename(columns=_STEP_COLUMNS)
        for col in _EMPTY_IN_STEP_RUNS:
            cases[col] = float("nan")
    schema = manifest.get("schema", 1) if isinstance(manifest, dict) else 1
    if int(schema) >= 2:
        return cases
    cases = cases.rename(columns=_SCHEMA1_COLUMNS)
    if "device_p50_ms" in cases.columns:
        cases["device_method"] = (
            cases["device_p50_ms"].notna().map({True: SCHEMA1_METHOD, False: None})
        )
    # what schema 1 never measured stays empty, so every reader sees one set of columns
    for col in SCHEMA2_ONLY:
        if col not in cases.columns:
            cases[col] = float("nan")
    return cases


def _fold_repeats(cases: pd.DataFrame) -> pd.DataFrame:
    """Runs captured before commit (this fix) wrote the timing columns twice; pandas reads the
    second copy as `name.1`. Drop a copy that repeats its column exactly; keep anything else."""
    repeats = [
        col
        for col in cases.columns
        if col.endswith(".1")
        and col[:-2] in cases.columns
        and cases[col].equals(cases[col[:-2]].rename(col))
    ]
    return cases.drop(columns=repeats)


# timing columns every reader does arithmetic on: text in them is damage, not a value
NUMERIC_CASE_COLUMNS = (
    "device_p50_ms",
    "device_p95_ms",
    "device_p5_ms",
    "device_iqr_ms",
    "step_p50_ms",
    "step_p95_ms",
    "step_p99_ms",
)
# what explain reads from rules.csv (docs/tables.md); without them the file is left out, loudly
RULE_COLUMNS_READ = ("launch", "case", "type", "message")


def load(path: Path) -> Run:
    """Read a finished run; a damaged one is a clear error, never a traceback. A damaged optional
    file that readers can do without (rules.csv) is left out with a warning in Run.warnings."""
    try:
        manifest = json.loads((path / MANIFEST).read_text())
        cases = upgrade(manifest, _fold_repeats(pd.read_csv(path / CASES, dtype=TEXT_COLUMNS)))
        optional = {name: _read_optional(path / name) for name in (KERNELS, SAMPLES)}
    except (OSError, ValueError) as exc:  # pandas' parser errors are ValueErrors
        raise ProfkitError(f"{path} is not a readable profkit run: {_oneline(exc)}") from exc
    missing = [c for c in REQUIRED_CASE_COLUMNS if c not in cases.columns]
    if not isinstance(manifest, dict) or "run_id" not in manifest or missing:
        what = f"{CASES} lacks {', '.join(missing)}" if missing else f"{MANIFEST} has no run_id"
        raise ProfkitError(f"{path} is not a readable profkit run: {what}")
    for col in NUMERIC_CASE_COLUMNS:
        if col in cases.columns:
            cases[col] = _numeric(path, col, cases[col])
    rules, warnings = _read_rules(path / RULES)
    lines, more = _read_source_lines(path / SOURCE_LINES)
    return Run(
        path,
        manifest,
        cases,
        optional[KERNELS],
        rules,
        optional[SAMPLES],
        source_lines=lines,
        warnings=warnings + more,
    )


def _numeric(path: Path, col: str, values: pd.Series) -> pd.Series:
    numbers = pd.to_numeric(values, errors="coerce")
    bad = values[numbers.isna() & values.notna()]
    if not bad.empty:
        raise ProfkitError(
            f"{path} is not a readable profkit run: {CASES} column {col} holds text "
            f"({str(bad.iloc[0])[:40]!r} in row {bad.index[0] + 1}) where numbers belong"
        )
    return numbers


def _read_rules(f: Path) -> tuple[pd.DataFrame | None, list[str]]:
    """rules.csv, or None with a one-line warning when it is there but cannot be used."""
    try:
        rules = _read_optional(f)
    except (OSError, ValueError) as exc:
        return None, [f"{f} is unreadable ({_oneline(exc)[:120]}): left out, {_NO_RULES}"]
    missing = [c for c in RULE_COLUMNS_READ if rules is not None and c not in rules.columns]
    if missing:
        return None, [f"{f} lacks the column(s) {', '.join(missing)}: left out, {_NO_RULES}"]
    return rules, []


_NO_RULES = "so Nsight Compute's rule messages are not shown for this run"
# what explain and the dashboard read from source_lines.csv
SOURCE_LINE_COLUMNS_READ = ("launch", "file", "line", "inst_executed")
_SOURCE_TEXT = {"case": str, "kernel_name": str, "file": str, "source": str}


def _read_source_lines(f: Path) -> tuple[pd.DataFrame | None, list[str]]:
    """source_lines.csv, or None with a one-line warning when it is there but cannot be used."""
    try:
        lines = pd.read_csv(f, dtype=_SOURCE_TEXT) if f.is_file() and f.stat().st_size else None
    except (OSError, ValueError) as exc:
        return None, [f"{f} is unreadable ({_oneline(exc)[:120]}): left out, {_NO_LINES}"]
    if lines is None:
        return None, []
    missing = [c for c in SOURCE_LINE_COLUMNS_READ if c not in lines.columns]
    if missing:
        return None, [f"{f} lacks the column(s) {', '.join(missing)}: left out, {_NO_LINES}"]
    for col in _SOURCE_TEXT:  # an empty text cell reads back as NaN
        if col in lines.columns:
            lines[col] = lines[col].fillna("")
    return lines, []


_NO_LINES = "so its source lines are not shown"


def _oneline(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200]


def _read_optional(f: Path) -> pd.DataFrame | None:
    return pd.read_csv(f, dtype=TEXT_COLUMNS) if f.is_file() and f.stat().st_size else None
