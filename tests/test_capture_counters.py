"""The counter pass under every ncu outcome (a fake `ncu` on PATH): a failure keeps the timing
results as a timing-only run with the reason; success reads the report into kernels/rules tables."""

from __future__ import annotations

import dataclasses
import io
import json
import math
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from rich.console import Console

import profkit.capture
import profkit.hostenv
from profkit import store
from profkit.capture import CaptureOptions, counter_pass, run_capture
from profkit.counters import ncu
from profkit.counters.metrics import COUNTER_COLUMNS, METRICS
from profkit.spec import KernelSpec, Variant

PERM_NAMES = ("RmProfilingAdminOnly", "NVreg_RestrictProfilingToAdminUsers", "SYS_ADMIN")
TRITON_CASE = "rmsnorm.triton.float16.4096x8192"  # the cases in tests/fixtures/fx_rmsnorm
EAGER_CASE = "rmsnorm.eager.float16.4096x4096"
WRONG_CASE = "rmsnorm.native.float16.4096x4096"


def _never(*args, **kwargs):
    raise AssertionError("the counter pass never runs a variant in this process")


# only the name and the shape model matter here: no torch, no triton imported at collection
SPEC = KernelSpec(
    name="rmsnorm",
    description="stand-in",
    variants=(Variant("triton", _never),),
    make_inputs=_never,
    reference=_never,
    dtypes=("float16",),
    shapes=((4096, 8192),),
    tolerances={"float16": (1e-2, 1e-2)},
    bytes_moved=lambda s, e: (2 * s[0] * s[1] + s[1]) * e,
    flops=lambda s: 4 * s[0] * s[1],
)


def timing_table() -> pd.DataFrame:
    """What measure_cases returns: two correct, timed cases and one incorrect, untimed one."""
    return pd.DataFrame(
        [
            {
                "kernel": "rmsnorm",
                "variant": "triton",
                "baseline": False,
                "dtype": "float16",
                "shape": "4096x8192",
                "case": TRITON_CASE,
                "correct": True,
                "error": "",
                "device_reps": 500,
                "device_p50_ms": 0.0345,
                "device_p95_ms": 0.036,
                "device_iqr_ms": 0.0004,
            },
            {
                "kernel": "rmsnorm",
                "variant": "eager",
                "baseline": True,
                "dtype": "float16",
                "shape": "4096x4096",
                "case": EAGER_CASE,
                "correct": True,
                "error": "",
                "device_reps": 300,
                "device_p50_ms": 0.171,
                "device_p95_ms": 0.18,
                "device_iqr_ms": 0.002,
            },
            {
                "kernel": "rmsnorm",
                "variant": "native",
                "baseline": True,
                "dtype": "float16",
                "shape": "4096x4096",
                "case": WRONG_CASE,
                "correct": False,
                "error": "outside tolerance",
                "device_reps": None,
                "device_p50_ms": None,
                "device_p95_ms": None,
                "device_iqr_ms": None,
            },
        ]
    )


def options(tmp_path: Path, **kwargs) -> CaptureOptions:
    return CaptureOptions(
        dtypes=("float16",),
        shapes=((4096, 8192), (4096, 4096)),
        variants=("triton", "eager", "native"),
        root=tmp_path / "profiles",
        **kwargs,
    )


@pytest.fixture
def console() -> Console:
    return Console(file=io.StringIO(), width=200)


@pytest.fixture
def jobs(monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    """The job file each counter pass hands its worker, read while it still exists."""
    seen: list[dict] = []
    real = ncu.run_counter_pass

    def spy(program, *args, **kwargs):
        seen.append(json.loads(Path(program[-1]).read_text()))
        return real(program, *args, **kwargs)

    monkeypatch.setattr(ncu, "run_counter_pass", spy)
    return seen


def run_pass(tmp_path: Path, console: Console, **opts) -> tuple[dict, object, store.RunWriter]:
    writer = store.RunWriter(tmp_path / "profiles", "rmsnorm")
    block, kernels = counter_pass(SPEC, options(tmp_path, **opts), timing_table(), writer, console)
    return block, kernels, writer


def files(writer: store.RunWriter) -> set[str]:
    return {p.name for p in writer.tmp.iterdir()}


# --- failures: timing only, with the cause and the fix --------------------------------------------


@pytest.mark.parametrize(
    ("mode", "problem", "words"),
    [
        ("perm", "no_permission", "ERR_NVGPUCTRPERM"),
        ("no_kernels", "no_kernels", "profiled no kernels"),
        ("app_failed", "app_failed", "error code 1"),
        ("crash", "ncu_failed", "killed by signal 11"),
        ("other_error", "ncu_failed", "Failed to prepare kernel for profiling"),
    ],
)
def test_ncu_failure_is_timing_only(
    tmp_path: Path,
    console: Console,
    fake_ncu_on_path: Path,
    jobs: list[dict],
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
    problem: str,
    words: str,
) -> None:
    monkeypatch.setenv("FAKE_NCU_MODE", mode)
    block, kernels, writer = run_pass(tmp_path, console)
    assert kernels is None
    assert block["status"] == "timing_only"
    assert block["problem"] == problem
    assert words in block["reason"]
    assert block["fix"].startswith("Fix:")
    assert block["ncu_version"] == "2025.3.1.0"
    assert block["report"] is None
    # the job named the two correct cases only, and is gone; the ncu log stays with the run
    assert [(c["variant"], c["dtype"], c["shape"]) for c in jobs[0]["cases"]] == [
        ("triton", "float16", [4096, 8192]),
        ("eager", "float16", [4096, 4096]),
    ]
    assert jobs[0]["kernel"] == "rmsnorm"
    assert files(writer) == {"ncu.log"}
    assert "==PROF== Connected to process" in writer.path("ncu.log").read_text()
    assert "timing only:" in console.file.getvalue()


def test_permission_names_the_fix(
    tmp_path: Path, console: Console, fake_ncu_on_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_NCU_MODE", "perm")
    monkeypatch.setenv("FAKE_NCU_EXIT", "1")
    block, kernels, _ = run_pass(tmp_path, console)
    assert (block["status"], block["problem"], kernels) == ("timing_only", "no_permission", None)
    assert "RmProfilingAdminOnly" in block["reason"]
    assert "NVreg_RestrictProfilingToAdminUsers=0" in block["fix"]
    assert "SYS_ADMIN" in block["fix"]
    assert block["returncode"] == 1


def test_ncu_missing(tmp_path: Path, console: Console, monkeypatch: pytest.MonkeyPatch) -> None:
    empty_bin = tmp_path / "bin"
    empty_bin.mkdir()
    monkeypatch.setenv("PATH", str(empty_bin))
    monkeypatch.delenv(ncu.NCU_ENV, raising=False)
    block, kernels, writer = run_pass(tmp_path, console)
    assert kernels is None
    assert (block["status"], block["problem"]) == ("timing_only", "ncu_missing")
    assert "`ncu` was not found on PATH" in block["reason"]
    assert ncu.NCU_ENV in block["fix"]
    assert block["ncu_version"] is None and block["returncode"] is None
    assert files(writer) == set()  # no job file left behind, no log (ncu never ran)


def test_ncu_env_names_a_missing_program(
    tmp_path: Path, console: Console, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ncu.NCU_ENV, str(tmp_path / "no-such-ncu"))
    block, kernels, _ = run_pass(tmp_path, console)
    assert (block["status"], block["problem"], kernels) == ("timing_only", "ncu_missing", None)
    assert str(tmp_path / "no-such-ncu") in block["reason"]


def test_timeout(
    tmp_path: Path, console: Console, fake_ncu_on_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_NCU_MODE", "sleep")
    monkeypatch.setenv("FAKE_NCU_CHILD_PID", str(tmp_path / "child.pid"))
    block, kernels, writer = run_pass(tmp_path, console, ncu_timeout_s=1.0)
    assert kernels is None
    assert (block["status"], block["problem"]) == ("timing_only", "timeout")
    assert "time limit of 1 s" in block["reason"]
    assert block["returncode"] is None
    assert 1.0 <= block["wall_s"] < 8
    assert files(writer) == {"ncu.log"}


def test_no_correct_case_skips_ncu(
    tmp_path: Path, console: Console, fake_ncu_on_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_NCU_ARGV", str(tmp_path / "argv.json"))
    writer = store.RunWriter(tmp_path / "profiles", "rmsnorm")
    table = timing_table().assign(correct=False)
    block, kernels = counter_pass(SPEC, options(tmp_path), table, writer, console)
    assert kernels is None
    assert block == {
        "status": "timing_only",
        "problem": "no_cases",
        "reason": "no correct case to profile",
    }
    assert not (tmp_path / "argv.json").exists()  # ncu never ran
    assert files(writer) == set()


def test_unreadable_report_is_timing_only(
    tmp_path: Path, console: Console, fake_ncu_on_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ncu says it wrote its report, but the report cannot be read (here: placeholder bytes; in
    # life, e.g. an ncu_report older than the ncu): the timing results must survive
    monkeypatch.setenv("FAKE_NCU_MODE", "ok")
    block, kernels, writer = run_pass(tmp_path, console)
    assert kernels is None
    assert (block["status"], block["problem"]) == ("timing_only", "report_unreadable")
    assert "is not a readable Nsight Compute report" in block["reason"]
    assert block["fix"].startswith("Fix:") and store.REPORT in block["fix"]
    assert block["report"] == store.REPORT
    # the report stays with the run, to be read later
    assert files(writer) == {"ncu.log", store.REPORT}


# --- success: the fixture report read back --------------------------------------------------------


@pytest.fixture
def real_report(
    fake_ncu_on_path: Path, ncu_rep_path: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch
) -> Path:
    """The fake ncu "writes" its report by copying the real fx_rmsnorm report."""
    monkeypatch.setenv("FAKE_NCU_MODE", "ok")
    monkeypatch.setenv("FAKE_NCU_COPY", str(ncu_rep_path("fx_rmsnorm")))
    return ncu_rep_path("fx_rmsnorm")


def test_success_reads_the_report(
    tmp_path: Path, console: Console, real_report: Path, ncu_tables: Callable
) -> None:
    block, kernels, writer = run_pass(tmp_path, console)
    assert block["status"] == "ok"
    assert (block["problem"], block["reason"], block["fix"]) == (None, None, None)
    assert block["report"] == store.REPORT and block["returncode"] == 0
    # the fixture was captured before the curated set grew: only names not yet seen on the H200
    # (verified=False) may be missing from it; every verified name has a value there
    unverified = {m.ncu for m in METRICS if not m.verified}
    # ... and the cause catalogue's counters, added after the fixture was captured
    unverified |= {m.ncu for m in METRICS if m.group == "catalogue"}
    assert set(block.get("metrics_na", [])) <= unverified
    assert files(writer) == {"ncu.log", store.REPORT, store.KERNELS, store.RULES}
    assert writer.path(store.REPORT).read_bytes() == real_report.read_bytes()
    assert kernels.launch.tolist() == list(range(9))
    assert kernels.case.tolist() == [TRITON_CASE] + [EAGER_CASE] * 8
    assert kernels.kernel_name.iloc[0] == "_rmsnorm_kernel"
    expected = ncu_tables("fx_rmsnorm")
    written = pd.read_csv(writer.path(store.KERNELS))
    assert written.launch.tolist() == list(range(9))
    assert written.ncu_duration_ms.tolist() == pytest.approx(
        expected.kernels.ncu_duration_ms.tolist()
    )
    rules = pd.read_csv(writer.path(store.RULES))
    assert len(rules) == len(expected.rules) > 0
    assert set(rules.launch) <= set(range(9))
    assert "counter pass: 9 kernel launches" in console.file.getvalue()


# --- run_capture end to end, its GPU parts stubbed ------------------------------------------------


@pytest.fixture
def fake_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(
        profkit.hostenv,
        "fingerprint",
        lambda: {"hostname": "test", "gpu": "NVIDIA H200", "sm_count": 132},
    )
    monkeypatch.setattr(
        profkit.hostenv, "measure_ceilings", lambda: {"copy_gbps": 4200.0, "matmul_tflops": 700.0}
    )
    samples = pd.DataFrame({"case": TRITON_CASE, "kind": "device", "ms": [0.0344, 0.0345, 0.0347]})
    monkeypatch.setattr(profkit.capture, "measure_cases", lambda *args: (timing_table(), samples))
    # constructed: the memory an H200 reports (the CPU build of torch cannot be asked)
    monkeypatch.setattr(profkit.capture, "_memory_limit", lambda interpret: (150e9, "the GPU"))


def test_run_capture_without_permission_stores_timing_only(
    tmp_path: Path,
    console: Console,
    fake_gpu: None,
    fake_ncu_on_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FAKE_NCU_MODE", "perm")
    path = run_capture(SPEC, options(tmp_path), console)
    assert path.parent == tmp_path / "profiles"
    assert store.list_runs(tmp_path / "profiles") == [path]
    run = store.load(path)
    assert run.timing_only
    counters = run.manifest["counters"]
    assert (counters["status"], counters["problem"]) == ("timing_only", "no_permission")
    assert "ERR_NVGPUCTRPERM" in counters["reason"]
    assert "NVreg_RestrictProfilingToAdminUsers=0" in counters["fix"]
    assert run.manifest["mode"] == "gpu"
    assert run.manifest["ceilings"]["copy_gbps"] == 4200.0
    # every timing row is kept, with empty counter columns
    cases = run.cases
    assert cases.case.tolist() == [TRITON_CASE, EAGER_CASE, WRONG_CASE]
    assert cases.device_p50_ms.tolist()[:2] == [0.0345, 0.171] and math.isnan(
        cases.device_p50_ms.iloc[2]
    )
    assert set(COUNTER_COLUMNS) <= set(cases.columns)
    assert cases[list(COUNTER_COLUMNS)].isna().all().all()
    assert run.kernels is None and run.rules is None
    assert sorted(p.name for p in path.iterdir()) == sorted(
        [store.CASES, store.MANIFEST, "ncu.log", store.SAMPLES]
    )
    assert run.samples.ms.tolist() == [0.0344, 0.0345, 0.0347]  # raw samples kept, compressed
    assert run.manifest["schema"] == store.SCHEMA == 2
    assert not [p for p in (tmp_path / "profiles").iterdir() if p.name.startswith(".")]


def test_run_capture_with_counters_joins_them(
    tmp_path: Path, console: Console, fake_gpu: None, real_report: Path
) -> None:
    path = run_capture(SPEC, options(tmp_path), console)
    run = store.load(path)
    assert not run.timing_only and run.manifest["counters"]["status"] == "ok"
    cases = run.cases.set_index("case")
    assert cases.loc[TRITON_CASE, "kernel_count"] == 1
    assert cases.loc[EAGER_CASE, "kernel_count"] == 8  # the unfused chain's launches
    assert math.isnan(cases.loc[WRONG_CASE, "kernel_count"])  # not profiled
    kernels = run.kernels
    assert len(kernels) == 9
    assert cases.loc[EAGER_CASE, "dram_bytes"] == pytest.approx(
        kernels[kernels.case == EAGER_CASE].dram_bytes.sum()
    )
    assert cases.loc[TRITON_CASE, "device_p50_ms"] == 0.0345  # timing kept beside the counters
    assert run.rules is not None and len(run.rules) > 0


def test_measured_table_has_each_column_once(
    tmp_path: Path, console: Console, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A timed row already holds the timing columns; moving them to the end must not repeat them
    (Index.drop read a tuple as one label, and every stored schema-2 run had 19 columns twice)."""
    from profkit.measure import case_timing, correctness

    columns = {c: 1.0 for c in profkit.capture.TIMING_COLUMNS} | {"device_p50_ms": 0.0345}
    monkeypatch.setattr(
        correctness, "check", lambda *a, **k: correctness.Check(True, 0.0, 0.0, None)
    )
    monkeypatch.setattr(
        case_timing, "time_case", lambda *a: case_timing.CaseTiming(dict(columns), [])
    )
    monkeypatch.setattr(case_timing, "copy_gbps", lambda nbytes, cache: 4000.0)
    spec = dataclasses.replace(SPEC, variants=(Variant("triton", lambda inputs: None),))
    opts = dataclasses.replace(options(tmp_path), variants=("triton",), shapes=((4096, 8192),))
    table, _ = profkit.capture.measure_cases(spec, opts, console, {"copy_gbps": 4200.0})
    assert len(table.columns) == len(set(table.columns))
    assert table.loc[0, "device_p50_ms"] == 0.0345


def test_a_case_that_crashes_ncu_is_left_out_and_the_pass_rerun(
    tmp_path: Path,
    console: Console,
    fake_gpu: None,
    real_report: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On the H200 ncu died (exit 139) on one softmax case and took every case's counters with
    it; now the pass runs again without the case the worker had started."""
    jobs = tmp_path / "jobs.txt"
    monkeypatch.setenv("FAKE_NCU_MODE", "crash_on_case")
    monkeypatch.setenv("FAKE_NCU_CRASH_ON", EAGER_CASE)
    monkeypatch.setenv("FAKE_NCU_JOBS", str(jobs))
    run = store.load(run_capture(SPEC, options(tmp_path), console))
    assert jobs.read_text().split() == ["2", "1"]  # both correct cases, then all but the crash
    counters = run.manifest["counters"]
    assert counters["status"] == "ok" and counters["crashed_cases"] == [EAGER_CASE]
    assert "ncu crashed while profiling " + EAGER_CASE in console.file.getvalue()


def test_a_crash_with_nothing_left_to_isolate_is_timing_only(
    tmp_path: Path,
    console: Console,
    fake_gpu: None,
    fake_ncu_on_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    jobs = tmp_path / "jobs.txt"
    monkeypatch.setenv("FAKE_NCU_MODE", "crash_on_case")
    monkeypatch.setenv("FAKE_NCU_CRASH_ON", TRITON_CASE)  # no retry allowed: one pass, then none
    monkeypatch.setenv("FAKE_NCU_JOBS", str(jobs))
    monkeypatch.setattr(profkit.capture, "MAX_CRASH_RETRIES", 0)
    run = store.load(run_capture(SPEC, options(tmp_path), console))
    assert jobs.read_text().split() == ["2"]
    counters = run.manifest["counters"]
    assert counters["status"] == "timing_only" and counters["returncode"] == 139
    assert "crashed_cases" not in counters


# --- the --source pass ----------------------------------------------------------------------------


def test_source_pass_argv_profiles_each_cases_dominant_launch(
    tmp_path: Path,
    console: Console,
    fake_gpu: None,
    real_report: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The deep pass: SourceCounters + WarpStateStats, source imported, only the cases' ranges
    and their longest kernels; the default pass's command line does not change."""
    argv_file = tmp_path / "argv.json"
    monkeypatch.setenv("FAKE_NCU_ARGV", str(argv_file))
    default = store.load(run_capture(SPEC, options(tmp_path), console))
    default_argv = json.loads(argv_file.read_text())
    assert "source_pass" not in default.manifest
    run = store.load(run_capture(SPEC, options(tmp_path, source=True), console))
    argv = json.loads(argv_file.read_text())  # the last call: the source pass
    counter_argv = run.manifest["counters"]
    assert "--import-source" not in default_argv and "SourceCounters" not in default_argv
    assert counter_argv["sections"] == default.manifest["counters"]["sections"]
    kernels = run.kernels
    longest = kernels.loc[kernels.groupby("case").ncu_duration_ms.idxmax()]
    eager = longest.set_index("case").kernel_name[EAGER_CASE]
    assert eager == "elementwise_kernel"  # of its 8 launches, the longest
    assert argv[argv.index("--nvtx-include") + 1] == (
        r"regex:profkit@(rmsnorm\.triton\.float16\.4096x8192|rmsnorm\.eager\.float16\.4096x4096)/"
    )
    assert argv[argv.index("--kernel-name") + 1] == "regex:^(_rmsnorm_kernel|elementwise_kernel)$"
    assert argv[argv.index("--import-source") + 1] == "yes"
    sections = [argv[i + 1] for i, a in enumerate(argv) if a == "--section"]
    assert sections == ["SourceCounters", "WarpStateStats"]
    assert argv[argv.index("--metrics") + 1] == "gpu__time_duration.sum"
    # the fake wrote the default pass's report again: it has no SourceCounters
    block = run.manifest["source_pass"]
    assert (block["status"], block["problem"]) == ("failed", "no_source_counters")
    assert block["cases"] == 2 and block["wall_s"] >= 0 and block["report"] == store.SOURCE_REPORT
    assert run.manifest["counters"]["status"] == "ok" and run.source_lines is None
    assert "source pass: ncu with SourceCounters + WarpStateStats" in console.file.getvalue()


@pytest.mark.parametrize(
    ("mode", "problem"),
    [("perm", "no_permission"), ("crash", "ncu_failed"), ("app_failed", "app_failed")],
)
def test_a_failed_source_pass_keeps_the_counters(
    tmp_path: Path,
    console: Console,
    fake_gpu: None,
    real_report: Path,
    monkeypatch: pytest.MonkeyPatch,
    mode: str,
    problem: str,
) -> None:
    monkeypatch.setenv("FAKE_NCU_SOURCE_MODE", mode)
    path = run_capture(SPEC, options(tmp_path, source=True), console)
    run = store.load(path)
    assert run.manifest["counters"]["status"] == "ok" and len(run.kernels) == 9
    block = run.manifest["source_pass"]
    assert (block["status"], block["problem"]) == ("failed", problem)
    assert block["reason"] and block["fix"].startswith("Fix:")
    assert run.source_lines is None
    assert (path / "ncu-source.log").is_file() and not (path / "ncu-source-job.json").exists()
    assert "source pass failed:" in console.file.getvalue()


def test_a_source_pass_that_finds_no_case_says_so(
    tmp_path: Path,
    console: Console,
    fake_gpu: None,
    real_report: Path,
    ncu_rep_path: Callable[[str], Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """fx_source has SourceCounters but no profkit ranges: nothing in it is a case's launch."""
    monkeypatch.setenv("FAKE_NCU_SOURCE_COPY", str(ncu_rep_path("fx_source")))
    run = store.load(run_capture(SPEC, options(tmp_path, source=True), console))
    block = run.manifest["source_pass"]
    assert (block["status"], block["problem"]) == ("failed", "no_match")
    assert run.source_lines is None


def test_source_pass_without_counters_is_skipped(
    tmp_path: Path,
    console: Console,
    fake_gpu: None,
    fake_ncu_on_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FAKE_NCU_MODE", "perm")
    run = store.load(run_capture(SPEC, options(tmp_path, source=True), console))
    assert run.timing_only
    block = run.manifest["source_pass"]
    assert (block["status"], block["problem"]) == ("skipped", "no_counters")


def test_source_pass_timeout(
    tmp_path: Path,
    console: Console,
    fake_gpu: None,
    real_report: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FAKE_NCU_SOURCE_MODE", "sleep")
    monkeypatch.setenv("FAKE_NCU_CHILD_PID", str(tmp_path / "child.pid"))
    monkeypatch.setattr(ncu, "KILL_GRACE_S", 1.0)
    opts = options(tmp_path, source=True, ncu_timeout_s=2.0)
    run = store.load(run_capture(SPEC, opts, console))
    assert run.manifest["counters"]["status"] == "ok"
    block = run.manifest["source_pass"]
    assert (block["status"], block["problem"]) == ("failed", "timeout")
    assert 2.0 <= block["wall_s"] < 10
