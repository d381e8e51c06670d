"""Source lines on a real H200 report (tests/fixtures/fx_source: Triton's wide_row, which spills,
twice, and hist, whose atomics contend on 4 bins; SourceCounters + WarpStateStats): the per-line
table checked against ncu_report's own per-PC values and NVIDIA's derived metrics, and the hot
line explain names from it."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from profkit.counters.sourcelines import LINE_COLUMNS, STALL_PREFIX, per_pc
from profkit.explain import hotlines

WIDE_ROW = (0, 1)  # launches of wide_row (the same kernel twice), then hist
HIST = 2


@pytest.fixture(scope="module")
def actions(ncu_rep_path: Callable[[str], Path]) -> list:
    """fx_source's launches as ncu_report gives them (the reference for every figure here)."""
    from profkit.counters.ncu_rep import import_ncu_report

    ctx = import_ncu_report().load_report(str(ncu_rep_path("fx_source")))
    return [
        ctx.range_by_idx(i).action_by_idx(j)
        for i in range(ctx.num_ranges())
        for j in range(ctx.range_by_idx(i).num_actions())
    ]


@pytest.fixture(scope="module")
def lines(ncu_tables: Callable) -> pd.DataFrame:
    return ncu_tables("fx_source").source_lines


def test_every_launch_has_its_lines(lines: pd.DataFrame, ncu_tables: Callable) -> None:
    assert list(lines.columns) == list(LINE_COLUMNS)
    kernels = ncu_tables("fx_source").kernels
    assert kernels.kernel_name.tolist() == ["wide_row", "wide_row", "hist"]
    assert sorted(lines.launch.unique()) == [0, 1, 2]
    # every PC maps to a line: Triton emits line info
    assert lines.line.notna().all() and (lines.file != "").all()


@pytest.mark.parametrize("launch", [0, 1, 2])
@pytest.mark.parametrize(
    ("column", "metric"),
    [
        ("inst_executed", "inst_executed"),
        ("samples", "smsp__pcsamp_sample_count"),
        ("stall_long_scoreboard", STALL_PREFIX + "long_scoreboard"),
        ("stall_membar", STALL_PREFIX + "membar"),
        ("global_sectors", "memory_l2_theoretical_sectors_global"),
        ("global_sectors_ideal", "memory_l2_theoretical_sectors_global_ideal"),
    ],
)
def test_lines_add_up_to_the_launch(
    lines: pd.DataFrame, actions: list, launch: int, column: str, metric: str
) -> None:
    """Summed over its lines, each column is the launch's own total of the per-PC metric."""
    mine = lines[lines.launch == launch]
    assert mine[column].sum() == pytest.approx(sum(per_pc(actions[launch], metric).values()))
    assert mine[column].sum() > 0 or column == "stall_membar"


@pytest.mark.parametrize("launch", [0, 1, 2])
def test_excess_sectors_are_nvidias(lines: pd.DataFrame, actions: list, launch: int) -> None:
    """sectors minus ideal, per instruction, is NVIDIA's own derived "excessive" metric (0 in
    this fixture, whose accesses are all ideal; the phrase is checked on a constructed line)."""
    derived = per_pc(actions[launch], "derived__memory_l2_theoretical_sectors_global_excessive")
    mine = lines[lines.launch == launch]
    assert mine.excess_sectors.sum() == pytest.approx(sum(derived.values()))


def test_spill_instructions_are_the_local_memory_ones(lines: pd.DataFrame, actions: list) -> None:
    """local_inst counts the instructions at PCs whose memory_type is local (8): STL/LDL."""
    for launch in WIDE_ROW:
        inst = per_pc(actions[launch], "inst_executed")
        kind = per_pc(actions[launch], "memory_type")
        local = sum(inst[pc] for pc, t in kind.items() if t == 8)
        assert local > 0
        assert lines[lines.launch == launch].local_inst.sum() == pytest.approx(local)
        sass = {actions[launch].sass_by_pc(pc).split()[0] for pc, t in kind.items() if t == 8}
        assert {s.split(".")[0] for s in sass} <= {"STL", "LDL"}
    assert lines[lines.launch == HIST].local_inst.sum() == 0  # hist does not spill


def test_source_text_is_the_reports_copy(lines: pd.DataFrame, actions: list) -> None:
    embedded = actions[HIST].source_files()
    for row in lines[lines.launch == HIST].itertuples():
        assert row.source == embedded[row.file].splitlines()[row.line - 1].strip()
    text = lines.set_index(["launch", "line"]).source
    assert text[(HIST, 23)].startswith("tl.atomic_add(")
    # Triton's own reductions (tl.max, tl.sum) are lines of an installed package
    library = lines[lines.library.astype(bool)]
    assert not library.empty and library.file.str.contains("/triton/language/").all()


def test_a_default_pass_report_has_no_lines(ncu_tables: Callable) -> None:
    """The default counter pass stores a per-PC inst_executed too, but no SourceCounters."""
    assert ncu_tables("fx_rmsnorm").source_lines.empty
    assert ncu_tables("fx_matmul").source_lines.empty


# --- the hot line ---------------------------------------------------------------------------------


def _stall_share(mine: pd.DataFrame, line: int, reason: str) -> float:
    return 100 * mine.set_index("line")[f"stall_{reason}"][line] / mine[f"stall_{reason}"].sum()


def test_hist_hot_line_is_the_atomic(lines: pd.DataFrame) -> None:
    found = hotlines.by_launch(lines)[HIST]
    mine = lines[lines.launch == HIST]
    reasons = mine.filter(like="stall_").drop(columns="stall_selected").sum()
    assert found.stall == reasons.idxmax()[6:] == "long_scoreboard"
    assert found.hot.line == 23
    share = _stall_share(mine, 23, "long_scoreboard")
    assert found.hot_share_pct == pytest.approx(share)
    assert found.headline == f"line 23 (p1.py): {share:.0f}% of the long-scoreboard stalls"
    assert found.local_inst == 0 and found.spill_line is None


def test_wide_row_names_its_spills(lines: pd.DataFrame) -> None:
    for launch in WIDE_ROW:
        found = hotlines.by_launch(lines)[launch]
        mine = lines[(lines.launch == launch) & ~lines.library.astype(bool)]
        hot = mine.loc[mine.stall_long_scoreboard.idxmax()]
        assert found.hot.line == hot.line and not found.hot.library
        spill = lines[lines.launch == launch].sort_values("local_inst").iloc[-1]
        assert found.spill_line.line == spill.line
        assert found.spill_share_pct == pytest.approx(
            100 * spill.local_inst / lines[lines.launch == launch].local_inst.sum()
        )
        assert "local-memory (spill) instructions" in found.headline
        assert f"at line {spill.line}" in found.headline
        assert found.headline.startswith(f"line {hot.line} (p1.py): ")


def test_top_lines_are_ranked_by_samples(lines: pd.DataFrame) -> None:
    found = hotlines.by_launch(lines, top=3)[0]
    expected = lines[lines.launch == 0].sort_values("samples", ascending=False).line[:3]
    assert [x.line for x in found.lines] == expected.tolist()
    rows = hotlines.table_rows(found)
    top = lines[lines.launch == 0].sort_values("samples", ascending=False)[:3]
    assert [r["line"] for r in rows] == [
        f"{Path(f).name}:{n}" for f, n in zip(top.file, top.line, strict=True)
    ]
    total = sum(x.samples for x in found.lines)
    assert rows[0]["samples %"] == pytest.approx(100 * found.lines[0].samples / total)


def test_wasted_sectors_are_quoted_per_request(lines: pd.DataFrame) -> None:
    # constructed: hist's atomic line as if each request fetched 4 sectors for 1 ideal (the
    # fixture's accesses are all ideal: 0 wasted)
    mine = lines[lines.launch == HIST].copy()
    at = mine.line == 23
    mine.loc[at, "excess_sectors"] = 3 * mine.loc[at, "global_inst"]
    mine.loc[at, "global_sectors"] = 4 * mine.loc[at, "global_inst"]
    assert "3 of 4 sectors per request wasted" in hotlines.launch_lines(mine).headline
    assert "wasted" not in hotlines.by_launch(lines)[HIST].headline


def test_a_kernel_without_line_info_gets_the_hint(lines: pd.DataFrame) -> None:
    # the real launch's PCs as ncu stores them for a kernel built without line info: one row
    mine = lines[lines.launch == HIST]
    counts = mine.select_dtypes("number").drop(columns=["launch", "line"]).sum()
    row = {**mine.iloc[0].to_dict(), **counts.to_dict(), "file": "", "line": pd.NA, "source": ""}
    found = hotlines.launch_lines(pd.DataFrame([row]))
    assert found.status == "no_line_info"
    assert found.headline == hotlines.LINE_INFO_HINT
    assert "nvcc -lineinfo" in found.headline and "TORCH_COMPILE_DEBUG" in found.headline


def test_a_file_without_its_text_keeps_the_line_numbers(lines: pd.DataFrame) -> None:
    mine = lines[lines.launch == HIST].assign(source="")
    found = hotlines.launch_lines(mine)
    assert found.hot.line == 23 and found.headline.startswith("line 23 (p1.py)")
    assert found.notes == [hotlines.NO_TEXT_NOTE]


def test_not_measured() -> None:
    class Bare:
        source_lines = None
        kernels = None

    hot = hotlines.for_run(Bare())
    assert not hot.measured
    finding = type("F", (), {"kind": "case", "case": "x", "evidence": {}})()
    assert hot.line_for(finding) == hotlines.NOT_MEASURED
    assert hotlines.not_measured(3).headline == hotlines.NOT_MEASURED


def test_by_case_takes_the_longest_launch(lines: pd.DataFrame, ncu_tables: Callable) -> None:
    # constructed: the fixture's three launches put in one case (ncu recorded no NVTX ranges)
    kernels = ncu_tables("fx_source").kernels.assign(case="p1.one")
    found = hotlines.by_case(lines.assign(case="p1.one"), kernels)
    longest = int(kernels.loc[kernels.ncu_duration_ms.idxmax(), "launch"])
    assert longest == HIST and found["p1.one"].launch == HIST
    assert not math.isnan(found["p1.one"].hot_share_pct)


def test_a_library_line_is_named_when_no_user_line_stalls(lines: pd.DataFrame) -> None:
    # constructed: wide_row's lines of p1.py without long-scoreboard samples; Triton's tl.max
    # line (standard.py) then holds them all
    mine = lines[lines.launch == 0].copy()
    mine.loc[~mine.library.astype(bool), "stall_long_scoreboard"] = 0.0
    found = hotlines.launch_lines(mine)
    assert found.stall == "long_scoreboard" and found.hot.library
    assert found.hot_share_pct == pytest.approx(
        100 * mine.stall_long_scoreboard.max() / mine.stall_long_scoreboard.sum()
    )


def test_a_failed_source_pass_says_why() -> None:
    class Failed:
        source_lines = None
        kernels = None
        manifest = {"source_pass": {"status": "failed", "reason": "ncu was killed by signal 9"}}

    finding = type("F", (), {"kind": "case", "case": "x", "evidence": {}})()
    said = hotlines.for_run(Failed()).line_for(finding)
    assert said == "not measured: the source pass failed (ncu was killed by signal 9)"


class _WithoutSections:
    """An action as Nsight Compute 2025.3.1's own ncu_report gives it: no `sections()`."""

    def __init__(self, action) -> None:
        self._action = action

    def __getattr__(self, name: str):
        if name == "sections":
            raise AttributeError(name)
        return getattr(self._action, name)


def test_source_counters_are_found_without_the_sections_api(actions: list, ncu_rep_path) -> None:
    from profkit.counters.ncu_rep import import_ncu_report
    from profkit.counters.sourcelines import has_source_counters

    assert all(has_source_counters(_WithoutSections(a)) for a in actions)
    # the default counter pass keeps a per-PC inst_executed, but no warp samples
    ctx = import_ncu_report().load_report(str(ncu_rep_path("fx_rmsnorm")))
    plain = [ctx.range_by_idx(0).action_by_idx(i) for i in range(ctx.range_by_idx(0).num_actions())]
    assert plain and not any(has_source_counters(_WithoutSections(a)) for a in plain)
