"""Shared fixtures and helpers: the real Nsight Compute reports in tests/fixtures (decompressed,
parsed once), a fake ncu on PATH, the CLI's one-line errors, and each test's tier."""

from __future__ import annotations

import lzma
import os
import re
import shutil
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pytest
from click.testing import Result

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).parent / "fixtures"


def one_line_error(result: Result, *words: str) -> str:
    """A non-zero exit with exactly one non-empty line on stderr, `error: ...`, no traceback."""
    assert result.exit_code != 0, result.output
    # an exception other than SystemExit escaped the CLI: on a terminal, a traceback
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: "), lines[0]
    assert "Traceback" not in result.output
    for word in words:
        assert word in lines[0]
    return lines[0]


@pytest.fixture(scope="session")
def ncu_rep_path(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """name ('fx_rmsnorm') -> that report decompressed (ncu_report reads only real files)."""
    folder = tmp_path_factory.mktemp("ncu-rep")

    @cache
    def path(name: str) -> Path:
        out = folder / f"{name}.ncu-rep"
        with lzma.open(FIXTURES / f"{name}.ncu-rep.xz") as src, out.open("wb") as dst:
            shutil.copyfileobj(src, dst)
        return out

    return path


@pytest.fixture(scope="session")
def ncu_tables(ncu_rep_path: Callable[[str], Path]) -> Callable:
    """name -> profkit.counters.ncu_rep.read_report of that fixture, parsed once per session: the
    tables are shared between tests, so copy before changing them."""
    from profkit.counters.ncu_rep import read_report

    return cache(lambda name: read_report(ncu_rep_path(name)))


TIERS = ("unit", "interpret", "browser", "gpu")  # registered in pyproject.toml
# modules whose tests run kernels on the CPU, by name, so that a new kernel test file needs no
# marker: *_interpret.py, the decode lab's (its step runs on the CPU), the offline sm_90 build
INTERPRET_MODULES = re.compile(
    r"test_\w+_interpret|test_decode|test_decode_attention|test_decode_bench|test_decode_counters"
    r"|test_sum_sm90"
)


# The files that cost most on CI's 2 cores (seconds of one worker, measured 2026-12-04: browser 40,
# the fresh venv 21, cluster 14 ...), run first: xdist hands each file to whichever worker is free
# (loadfile), so the long ones start together and the short ones fill in at the end; in plain file
# order the long ones (packaging, the whole-runs checks) came last, on one worker
LONG_FIRST = (
    "test_dashboard_browser",
    "test_packaging",
    "test_cluster",
    "test_decode_bench",
    "test_dashboard",
    "test_cli",
    "test_decode",
    "test_whole_runs_and_exit_statuses",
    "test_dashboard_iteration_latency",
    "test_profile_cli",
    "test_decode_attention",
)


def _file_rank(item: pytest.Item) -> int:
    name = item.module.__name__.rsplit(".", 1)[-1] if item.module else ""
    return LONG_FIRST.index(name) if name in LONG_FIRST else len(LONG_FIRST)


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The long files first (LONG_FIRST; stable, so each file keeps its order). Each test gets one
    tier: its own marker (a module's `pytestmark = pytest.mark.browser`), else interpret for the
    modules above, else unit."""
    items.sort(key=_file_rank)
    for item in items:
        if any(item.get_closest_marker(tier) for tier in TIERS):
            continue
        module = item.module.__name__ if item.module else ""
        interpret = INTERPRET_MODULES.fullmatch(module.rsplit(".", 1)[-1])
        item.add_marker(pytest.mark.interpret if interpret else pytest.mark.unit)


FAKE_NCU = Path(__file__).parent / "fake_ncu" / "ncu"
FAKE_NCU_VARS = (
    "FAKE_NCU_MODE",
    "FAKE_NCU_EXIT",
    "FAKE_NCU_ARGV",
    "FAKE_NCU_CHILD_PID",
    "FAKE_NCU_COPY",
    "FAKE_NCU_VERSION",
    "FAKE_NCU_SOURCE_MODE",
    "FAKE_NCU_SOURCE_COPY",
)


@pytest.fixture
def fake_ncu_on_path(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """tests/fake_ncu/ncu first on PATH (run by this interpreter), PROFKIT_NCU and every FAKE_NCU_*
    variable unset: a test picks the outcome with FAKE_NCU_MODE (see the script). Its folder is
    outside tmp_path, so a test's tmp_path holds only what the test made."""
    bin_dir = tmp_path_factory.mktemp("fake-ncu-bin")
    fake = bin_dir / "ncu"
    body = FAKE_NCU.read_text().split("\n", 1)[1]
    fake.write_text(f"#!{sys.executable}\n{body}")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.delenv("PROFKIT_NCU", raising=False)
    for name in FAKE_NCU_VARS:
        monkeypatch.delenv(name, raising=False)
    return fake
