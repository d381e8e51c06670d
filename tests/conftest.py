"""Shared fixtures: the real Nsight Compute reports in tests/fixtures, decompressed, parsed once."""

from __future__ import annotations

import lzma
import shutil
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
