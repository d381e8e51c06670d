"""The source pass on the H200 (session 8): `profkit capture --source` on the zoo's spilling row
kernel and its contended histogram, each beside its healthy twin (tests/data/zoo). The hot line
must be the line the cause lives on, read from the capture's own per-line table."""

from __future__ import annotations

from pathlib import Path

import pytest

from profkit import store
from profkit.explain import hotlines

ZOO = Path(__file__).parent / "data" / "zoo"


def _lines(kernel: str) -> dict[str, hotlines.LaunchLines]:
    runs = [p for p in store.list_runs(ZOO) if p.name.startswith(kernel + "-")]
    run = store.load(runs[-1])
    if run.source_lines is None:
        pytest.skip(f"the newest {kernel} run has no source lines")
    return {case.split(".")[1]: lines for case, lines in
            hotlines.by_case(run.source_lines, run.kernels).items()}  # fmt: skip


def _text(lines: hotlines.LaunchLines, number: int | None) -> str:
    return next((ln.source for ln in lines.lines if ln.line == number), "")


def test_the_spilling_row_names_its_spills_and_the_twin_has_none() -> None:
    found = _lines("zoo_spills")
    spilling, twin = found["one_warp"], found["sixteen_warps"]
    assert spilling.status == twin.status == "measured"
    assert spilling.local_inst > 1e6 and spilling.spill_line is not None
    assert "local-memory (spill)" in spilling.headline or "spills:" in spilling.headline
    assert twin.local_inst == 0 and twin.spill_line is None


def test_the_contended_histogram_stalls_on_its_atomic_line() -> None:
    found = _lines("zoo_atomics")
    hot = found["contended"]
    assert hot.stall == "long_scoreboard" and hot.hot_share_pct > 80
    assert "atomic" in _text(hot, hot.hot.line)
