"""Run directories under profiles/: written atomically, read back without GPU or torch.

A run is written into a hidden temp directory and renamed into place only once complete, so an
interrupted capture never leaves a directory that looks like a finished run, and a failed one never
touches runs already stored.
"""

from __future__ import annotations

import csv
import errno
import gzip
import hashlib
import io
import json
import lzma
import os
import re
import secrets
import shutil
import socket
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd

from profkit.errors import ProfkitError
from profkit.stats.throttle import REASON_SEP

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
# a profile run's timing export (torch.profiler's launches and op calls, `profkit profile`): its
# tables are made from it when the run is stored, and nothing reads it after
PROFILE_EXPORT = "timing.json.gz"
# what a run keeps as its evidence, read by no command: a copy of the run may leave it out
EVIDENCE_ONLY = (REPORT, SOURCE_REPORT, PROFILE_EXPORT)
SOURCE_LINES = "source_lines.csv"  # its per-line table (profkit.counters.sourcelines)
TMP_PREFIX = ".tmp-"
# the manifest's checksum of its own content (every other field), so that an edit to the manifest
# (its kernel, GPU, ceilings, run id) is found as an edit to a table is; runs stored before it
# read with the manifest itself unverified
MANIFEST_SHA = "manifest_sha256"


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
    if (
        "PROFKIT_PROFILES" in os.environ
        or list_runs(root)
        or unreadable_runs(root)  # damaged runs are runs: said, never swapped for the example
        or not list_runs(EXAMPLES)
    ):
        return root, False
    return EXAMPLES, True


# What a stored run is, said in its manifest's "kind" and read once, at load (Run.kind): a lab
# capture (`profkit capture`: cases of kernel x variant x dtype x shape), a decode run (the decode
# lab's iteration latencies: step_* columns, device_* empty), a program's profile (`profkit
# profile`: cases are kernel groups) or a tune run (`profkit tune`: cases are configurations).
CAPTURE, DECODE, PROFILE, TUNE = "capture", "decode", "profile", "tune"
RUN_KINDS = (CAPTURE, DECODE, PROFILE, TUNE)
# the iteration-latency columns a decode run's cases carry (its kind, for runs stored before kinds)
ITERATION_COLUMNS = ("step_p99_ms", "step_p95_over_p50", "tail_stage")


def run_kind(manifest: dict, cases: pd.DataFrame) -> str:
    """The manifest's kind; a run stored before kinds gets its kind from what it holds."""
    if manifest.get("kind") in RUN_KINDS:
        return manifest["kind"]
    timed_iterations = all(c in cases.columns for c in ITERATION_COLUMNS) and bool(
        pd.to_numeric(cases["step_p99_ms"], errors="coerce").notna().any()
    )
    return DECODE if timed_iterations else CAPTURE


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
    # True: every file matched the manifest's checksums; False: stored before runs carried them
    verified: bool = False
    # read with --force: what was wrong (one line each); what was damaged is left out
    damage: list[str] = field(default_factory=list)
    kind: str = CAPTURE  # one of RUN_KINDS, decided at load (run_kind)

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
    """Collects a run's files in a temp directory; `finish` renames it into place. A failure to
    write (a full disk) is a one-line error; the caller abandons the temp directory."""

    root: Path
    kernel: str
    run_id: str = ""
    tmp: Path = field(init=False)

    def __post_init__(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.run_id = self.run_id or new_run_id(self.kernel)
        self.tmp = self.root / f"{TMP_PREFIX}{self.run_id}{_owner_tag()}"
        self.tmp.mkdir()

    def path(self, name: str) -> Path:
        return self.tmp / name

    def write_table(self, name: str, df: pd.DataFrame) -> None:
        with self._storing():
            df.to_csv(self.tmp / name, index=False)

    def write_samples(self, df: pd.DataFrame) -> None:
        """Raw samples, compressed; 6 significant digits keep nanoseconds of a millisecond."""
        with self._storing():
            df.to_csv(self.tmp / SAMPLES, index=False, float_format="%.6g", compression="gzip")

    def finish(self, manifest: dict) -> Path:
        """Write the manifest last, with the counts and checksums that vouch for every file, then
        rename the directory into place; never overwrite a run."""
        with self._storing():
            vouch = account(self.tmp)
        while True:
            final = self.root / self.run_id
            body = {"schema": SCHEMA, **manifest, **vouch, "run_id": self.run_id, "complete": True}
            with self._storing():
                _write_manifest(self.tmp, body)
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

    @contextmanager
    def _storing(self) -> Iterator[None]:
        try:
            yield
        except OSError as exc:
            raise ProfkitError(
                f"could not store run {self.run_id} under {self.root}/: "
                f"{exc.strerror or exc}; nothing was stored"
            ) from exc


# A temp directory names its owner, `@host.pid`: one whose process is gone (killed by SIGKILL or
# SIGTERM, which leave no time to clean up) is swept by the next capture on this host. Another
# host's, or a live process's, is never touched.
_OWNER_RE = re.compile(r"@(?P<host>[^@/]+)\.(?P<pid>\d+)$")


def _owner_tag() -> str:
    return f"@{socket.gethostname()}.{os.getpid()}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


def sweep_stale(root: Path) -> list[str]:
    """Remove the temp directories under root that captures killed on this host left behind;
    -> their names."""
    try:
        entries = [p for p in root.iterdir() if p.name.startswith(TMP_PREFIX) and p.is_dir()]
    except OSError:  # no folder yet (or unreadable: the writer will say so)
        return []
    swept = []
    for path in sorted(entries):
        owner = _OWNER_RE.search(path.name)
        if owner is None or owner["host"] != socket.gethostname() or _alive(int(owner["pid"])):
            continue
        shutil.rmtree(path, ignore_errors=True)
        if not path.exists():
            swept.append(path.name)
    return swept


# ---- the manifest's account of a run: counts and checksums -------------------------------------

# the tables whose rows the manifest counts, and under which name
COUNTED = {CASES: "cases", KERNELS: "launches", SAMPLES: "samples", RULES: "rules"}


def _sha256(f: Path) -> str:
    digest = hashlib.sha256()
    with f.open("rb") as src:
        for block in iter(lambda: src.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def account(folder: Path) -> dict:
    """{'counts': rows per table, 'files': {name: {bytes, sha256}}} of a run directory's files
    (all but the manifest)."""
    files = {
        f.name: {"bytes": f.stat().st_size, "sha256": _sha256(f)}
        for f in sorted(folder.iterdir())
        if f.is_file() and f.name != MANIFEST
    }
    counts = {
        key: len(pd.read_csv(folder / name)) if files[name]["bytes"] else 0
        for name, key in COUNTED.items()
        if name in files
    }
    return {"counts": counts, "files": files}


def seal(path: Path) -> None:
    """Record a finished run's counts and checksums in its manifest as they are now (for a run
    edited on purpose, e.g. a test's, or one stored before runs carried them)."""
    manifest = json.loads((path / MANIFEST).read_text())
    manifest.update(account(path))
    _write_manifest(path, manifest)


def manifest_checksum(manifest: dict) -> str:
    """sha256 of a manifest's content (all but its own checksum), key order and layout aside."""
    content = {k: v for k, v in manifest.items() if k != MANIFEST_SHA}
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


def _write_manifest(folder: Path, manifest: dict) -> None:
    body = {k: v for k, v in manifest.items() if k != MANIFEST_SHA}
    body[MANIFEST_SHA] = manifest_checksum(body)
    (folder / MANIFEST).write_text(json.dumps(body, indent=2) + "\n")


# tables a run kept as a reference (tests/data, the shipped example) may hold xz-compressed:
# NVIDIA's rule messages repeat, and compress ~30x, the launch table ~10x (tools/promote_run.py
# writes them so); their checksums are of the decompressed bytes, as captured
COMPRESSIBLE = (RULES, KERNELS)


def table_file(path: Path, name: str) -> Path:
    """A run's table `name`, or its xz-compressed form where only that is there."""
    f = path / name
    packed = path / f"{name}.xz"
    return packed if name in COMPRESSIBLE and not f.exists() and packed.is_file() else f


def _checksum_problems(path: Path, manifest: dict) -> list[str]:
    """'FILE: what is wrong' for each file that does not match the manifest's account (a table
    kept xz-compressed is checked by its decompressed bytes, which the manifest recorded)."""
    problems = []
    if MANIFEST_SHA in manifest and manifest[MANIFEST_SHA] != manifest_checksum(manifest):
        problems.append(f"{MANIFEST} does not match its own checksum (edited since capture)")
    files = manifest.get("files") or {}
    if not isinstance(files, dict):
        return [*problems, f"{MANIFEST}'s files entry is not a table of checksums"]
    for name, want in sorted(files.items()):
        want = want if isinstance(want, dict) else {}
        f = path / name
        if not f.is_file():
            if name in EVIDENCE_ONLY:
                # a raw ncu report (compressed after capture to be sent or committed) or a
                # profile's timing export, left out of a copy: profkit reads the run's tables,
                # never these in place
                continue
            packed = table_file(path, name)
            if packed != f:
                problems += _packed_problems(packed, name, want)
                continue
            problems.append(f"{name} is missing (the manifest lists it)")
            continue
        size = f.stat().st_size
        if size != want.get("bytes"):
            cut = "cut short" if size < want.get("bytes", 0) else "longer than recorded"
            problems.append(f"{name} is {cut} ({size} bytes, the manifest says {want['bytes']})")
        elif _sha256(f) != want.get("sha256"):
            problems.append(f"{name} does not match its checksum (changed since capture)")
    return problems


def _packed_problems(packed: Path, name: str, want: dict) -> list[str]:
    try:
        data = lzma.decompress(packed.read_bytes())
    except (OSError, lzma.LZMAError) as exc:
        return [f"{packed.name} does not decompress ({_oneline(exc)[:80]})"]
    if len(data) != want.get("bytes") or hashlib.sha256(data).hexdigest() != want.get("sha256"):
        return [f"{packed.name} does not hold the {name} the manifest recorded"]
    return []


def _damaged(path: Path, problems: list[str]) -> ProfkitError:
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return ProfkitError(
        f"run {path.name} is damaged: {problems[0]}{more}; --force reads what survives"
    )


def _manifest(path: Path) -> dict | None:
    """A finished run's manifest, or None when path holds no finished run."""
    try:
        manifest = json.loads((path / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    return manifest if isinstance(manifest, dict) and manifest.get("complete") is True else None


def is_run(path: Path) -> bool:
    return _manifest(path) is not None


# a run directory's name: its id, kernel-YYYYmmdd-HHMMSS-host-xxxxxx (new_run_id)
_RUN_NAME = re.compile(r"(?P<kernel>.+)-(?P<date>\d{8})-(?P<time>\d{6})-.+")


@dataclass(frozen=True)
class Unreadable:
    """A directory named as a run whose manifest is gone or damaged: no reader can use it, and no
    reader may skip it silently (it would read an older run as the newest)."""

    path: Path
    kernel: str
    why: str


def unreadable_runs(root: Path) -> list[Unreadable]:
    """The directories under root named as runs (not hidden: a capture in progress is) whose
    manifest is missing, not JSON, or not a finished run's."""
    if not root.is_dir():
        return []
    found = []
    for p in sorted(root.iterdir()):
        named = _RUN_NAME.fullmatch(p.name)
        if named and not p.name.startswith(".") and p.is_dir() and _manifest(p) is None:
            found.append(Unreadable(p, named["kernel"], _manifest_problem(p)))
    return found


def _manifest_problem(path: Path) -> str:
    f = path / MANIFEST
    if not f.is_file():
        return f"its {MANIFEST} is missing"
    try:
        manifest = json.loads(f.read_text())
    except (OSError, ValueError) as exc:
        return f"its {MANIFEST} is not JSON (cut short or overwritten: {_oneline(exc)[:60]})"
    if not isinstance(manifest, dict):
        return f"its {MANIFEST} is not a JSON object"
    return f"its {MANIFEST} does not mark it complete"


def _started(path: Path) -> str:
    """When a run started, YYYYmmddHHMMSS, from its id (the directory's name), else its
    manifest's creation time; '' when neither says."""
    named = _RUN_NAME.fullmatch(path.name)
    if named:
        return named["date"] + named["time"]
    created = str((_manifest(path) or {}).get("created", ""))
    return re.sub(r"\D", "", created)[:14]


def _newer_unreadable(root: Path, kernel: str | None, newest: Path | None) -> None:
    """Refuse to read `newest` (the newest readable run, of kernel or of any) when a run started at
    or after it cannot be read: the user asked for the newest run, and that one is damaged."""
    since = _started(newest) if newest is not None else ""
    bad = [
        u
        for u in unreadable_runs(root)
        if (kernel is None or u.kernel == kernel) and _started(u.path) >= since
    ]
    if not bad:
        return
    last = max(bad, key=lambda u: (_started(u.path), u.path.name))
    whose = f"of {kernel} " if kernel else ""
    older = f"; name an older run to read it instead (e.g. {newest.name})" if newest else ""
    raise ProfkitError(
        f"the newest run {whose}under {root}/, {last.path.name}, is damaged: {last.why}{older}"
    )


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
        _newer_unreadable(root, None, runs[-1] if runs else None)
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
            if _RUN_NAME.fullmatch(candidate.name):
                why = _manifest_problem(candidate)
                raise ProfkitError(f"run {candidate.name} is damaged: {why}")
            raise ProfkitError(f"{candidate} is not a profkit run (no complete {MANIFEST})")
    of_kernel = [p for p in list_runs(root, interpret=False) if _manifest(p).get("kernel") == ref]
    _newer_unreadable(root, ref, of_kernel[-1] if of_kernel else None)
    if of_kernel:
        return of_kernel[-1]
    checks = [p for p in list_runs(root) if _manifest(p).get("kernel") == ref]
    if checks:
        raise ProfkitError(
            f"{ref} has only {len(checks)} interpret run(s) under {root}/ (correctness only, "
            f"untimed): interpret runs are read by name, e.g. {checks[-1].name}"
        )
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
        return _structured_fields(cases)
    cases = cases.rename(columns=_SCHEMA1_COLUMNS)
    if "device_p50_ms" in cases.columns:
        timed = cases["device_p50_ms"].notna()
        cases["device_method"] = timed.map({True: SCHEMA1_METHOD, False: None})
        cases["host_in_window"] = _as_read(pd.Series(True, index=cases.index).where(timed))
    # what schema 1 never measured stays empty, so every reader sees one set of columns
    for col in SCHEMA2_ONLY:
        if col not in cases.columns:
            cases[col] = float("nan")
    return cases


def _structured_fields(cases: pd.DataFrame) -> pd.DataFrame:
    """The fields that runs stored before them said only in words, derived from those words:
    host_in_window (no schema-2 method has the host in its window), clock_throttled and
    throttle_reasons (from clock_note: NVML's reason names, and "sm clock X of Y MHz" when low).
    Runs that recorded no clocks keep them empty."""
    new = {}
    if "host_in_window" not in cases.columns and "device_method" in cases.columns:
        timed = cases["device_method"].notna()
        new["host_in_window"] = _as_read(pd.Series(False, index=cases.index).where(timed))
    if "clock_throttled" not in cases.columns and {"clock_note", "sm_clock_mhz"} <= set(cases):
        notes = cases["clock_note"].map(lambda v: v if isinstance(v, str) else "")
        read = pd.to_numeric(cases["sm_clock_mhz"], errors="coerce").notna()
        new["clock_throttled"] = _as_read((notes != "").where(read))
        names = notes.map(lambda n: [w for w in n.split("; ") if not w.startswith("sm clock")])
        joined = names.map(lambda words: REASON_SEP.join(w for w in words if w))
        # as a new run's column reads back: empty where no reason was set
        new["throttle_reasons"] = _as_read(joined.where(read & (joined != "")))
    # added at once: a wide table (a run with counters) read column by column is fragmented, and
    # inserting into it one column at a time warns
    return pd.concat([cases, pd.DataFrame(new, index=cases.index)], axis=1) if new else cases


def _as_read(column: pd.Series) -> pd.Series:
    """A derived column typed as the same values read back from a CSV (empty cells NaN): bool
    when none is empty, float when all are."""
    if column.isna().all():
        return pd.Series(float("nan"), index=column.index)
    return column.infer_objects()


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


def load(path: Path, force: bool = False) -> Run:
    """Read a finished run; a damaged one is a clear error, never a traceback. A run whose files
    do not match its manifest's checksums, or (runs stored before checksums) whose tables are cut
    short or missing, is refused naming the file; force=True reads what survives and lists the
    damage in Run.damage. A damaged optional file that readers can do without (rules.csv) is left
    out with a warning in Run.warnings."""
    damage: list[str] = []
    try:
        manifest = json.loads((path / MANIFEST).read_text())
        if not isinstance(manifest, dict):
            raise ValueError(f"{MANIFEST} is not a JSON object")
        damage += _checksum_problems(path, manifest)
        if damage and not force:
            raise _damaged(path, damage)
        text, cut = _whole_rows(path / CASES)
        damage += cut
        cases = upgrade(manifest, _fold_repeats(pd.read_csv(io.StringIO(text), dtype=TEXT_COLUMNS)))
        optional = {}
        for name in (KERNELS, SAMPLES):
            optional[name], cut = _read_table(table_file(path, name))
            damage += cut
    except (OSError, ValueError) as exc:  # pandas' parser errors are ValueErrors
        raise ProfkitError(f"{path} is not a readable profkit run: {_oneline(exc)}") from exc
    missing = [c for c in REQUIRED_CASE_COLUMNS if c not in cases.columns]
    if not isinstance(manifest, dict) or "run_id" not in manifest or missing:
        what = f"{CASES} lacks {', '.join(missing)}" if missing else f"{MANIFEST} has no run_id"
        raise ProfkitError(f"{path} is not a readable profkit run: {what}")
    for col in NUMERIC_CASE_COLUMNS:
        if col in cases.columns:
            cases[col] = _numeric(path, col, cases[col])
    damage += _count_problems(manifest, cases, optional, path, said=damage)
    if damage and not force:
        raise _damaged(path, damage)
    rules, warnings = _read_rules(table_file(path, RULES))
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
        verified=bool(manifest.get("files")) and not damage,
        damage=damage,
        kind=run_kind(manifest, cases),
    )


def _whole_rows(f: Path) -> tuple[str, list[str]]:
    """A CSV file's text without a row cut short (fewer fields than its header, or a last line
    with no newline), and one line saying what was cut. Reads .gz files whole or up to the cut."""
    if f.suffix == ".gz":
        raw = f.read_bytes()
        try:
            data, cut = gzip.decompress(raw), ""
        except (EOFError, OSError, zlib.error) as exc:
            # cut short: what came before the cut is whole; corrupt (bytes overwritten): what
            # inflates before the error may already be wrong, so nothing of it is kept
            unzip = zlib.decompressobj(zlib.MAX_WBITS | 16)
            try:
                data = unzip.decompress(raw)
                corrupt = exc if unzip.eof else None  # whole, but its check or trailer is wrong
            except zlib.error as error:
                corrupt = error
            if corrupt is not None:
                why = _oneline(corrupt)[:60]
                return "", [f"{f.name} is corrupt (it does not decompress: {why})"]
            cut = f"{f.name} is cut short ({_oneline(exc)[:60]})"
        text = data.decode("utf-8", errors="replace")
    elif f.suffix == ".xz":  # a reference run's table kept compressed (COMPRESSIBLE)
        try:
            text, cut = lzma.decompress(f.read_bytes()).decode("utf-8", errors="replace"), ""
        except (lzma.LZMAError, EOFError) as exc:  # EOFError: cut short
            return "", [f"{f.name} is corrupt or cut short (it does not decompress: {exc})"]
    else:
        text, cut = f.read_text(errors="replace"), ""
    if not text:
        return text, [cut] if cut else []
    if _every_row_whole(text):
        return text, [cut] if cut else []
    lines = text.splitlines(keepends=True)
    width = len(next(csv.reader([lines[0]])))
    if not lines[-1].endswith("\n"):
        cut = cut or f"{f.name} is cut short (its last row ends mid-line)"
        lines.pop()
    bad = [i for i, line in enumerate(lines[1:], 2) if _fields(line) != width]
    if bad:
        cut = cut or f"{f.name} is cut short (row {bad[0]} has fewer fields than its header)"
        lines = [line for i, line in enumerate(lines, 1) if i not in bad]
    return "".join(lines), [cut] if cut else []


# characters that make the fast check below inexact: quotes (a quoted field may hold commas or
# newlines), NULs, and every line break but \n that str.splitlines honours
_NOT_PLAIN = re.compile(r'["\0\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]')


def _every_row_whole(text: str) -> bool:
    """True when a plain CSV text (none of _NOT_PLAIN) ends in a newline and each line has as
    many commas as its header, counted by numpy: a decode run's 400k sample rows checked in
    milliseconds. False sends the text through the line-by-line check, which also says where."""
    if not text.endswith("\n") or _NOT_PLAIN.search(text):
        return False
    raw = np.frombuffer(text.encode(), np.uint8)
    ends = np.flatnonzero(raw == ord("\n"))
    commas = np.flatnonzero(raw == ord(","))
    per_line = np.diff(np.searchsorted(commas, ends), prepend=0)
    return bool(per_line.min() == per_line.max() == per_line[0] and per_line[0] > 0)


def _fields(line: str) -> int:
    """How many fields the csv module reads in one line; a line without quotes (or NULs) is
    counted by its commas, which gives the same number in a fraction of the time (a decode run's
    samples are 400k lines)."""
    if '"' in line or "\0" in line:
        return len(next(csv.reader([line]), []))
    return line.count(",") + 1 if line.strip("\r\n") else 0


def _read_table(f: Path) -> tuple[pd.DataFrame | None, list[str]]:
    if not (f.is_file() and f.stat().st_size):
        return None, []
    text, cut = _whole_rows(f)
    if not text.strip():
        return None, cut
    return pd.read_csv(io.StringIO(text), dtype=TEXT_COLUMNS), cut


def _count_problems(
    manifest: dict, cases: pd.DataFrame, tables: dict, path: Path, said: list[str]
) -> list[str]:
    """Rows the manifest (or, before it counted them, the run's own options) says the run holds,
    and tables it says must be there; not for a table left out whose damage is said already."""
    problems = []
    counts = manifest.get("counts") or {}
    found = {
        "cases": len(cases),
        "launches": len(tables[KERNELS]) if tables[KERNELS] is not None else 0,
        "samples": len(tables[SAMPLES]) if tables[SAMPLES] is not None else 0,
    }
    name = {v: k for k, v in COUNTED.items()}
    left_out = {t for t, df in tables.items() if df is None and any(s.startswith(t) for s in said)}
    for key, n in found.items():
        if key in counts and counts[key] != n and name[key] not in left_out:
            problems.append(f"{name[key]} holds {n} {key}, the manifest counts {counts[key]}")
    if counts:
        return problems
    # stored before the manifest counted rows: what its options and counters block imply
    options = manifest.get("options") or {}
    if str(manifest.get("command", "")).startswith("profkit capture") and options:
        want = 1
        for key in ("dtypes", "shapes", "variants"):
            want *= len(options.get(key) or [])
        if want and len(cases) < want:
            problems.append(f"{CASES} holds {len(cases)} cases, the run's options make {want}")
    status = (manifest.get("counters") or {}).get("status")
    if status == "ok" and tables[KERNELS] is None and KERNELS not in left_out:
        problems.append(f"{KERNELS} is missing or empty, though the manifest says counters were "
                        "collected")  # fmt: skip
    timed = "device_p50_ms" in cases and cases["device_p50_ms"].notna().any()
    schema2 = int(manifest.get("schema", 1)) >= 2
    if schema2 and timed and tables[SAMPLES] is None and SAMPLES not in left_out:
        problems.append(f"{SAMPLES} is missing or empty, though the run timed its cases")
    return problems


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
    except (OSError, ValueError, EOFError, lzma.LZMAError) as exc:  # EOFError: an .xz cut short
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
