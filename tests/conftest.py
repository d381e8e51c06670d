"""Shared fixtures: the real Nsight Compute reports in tests/fixtures, decompressed, parsed once."""

from __future__ import annotations

import lzma
import os
import shutil
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"


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
    """name -> profkit.report.read_report of that fixture, parsed once per session: the tables are
    shared between tests, so copy before changing them."""
    from profkit.report import read_report

    return cache(lambda name: read_report(ncu_rep_path(name)))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: takes tens of seconds (still runs by default)")


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
