"""Source lines through the command line (click's CliRunner): explain and the dashboard on the real
fx_source report and on a stored run carrying source_lines.csv, and capture's --source flag."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner, Result
from stored_runs import run_path

from profkit import store
from profkit.cli import cli
from profkit.counters.sourcepass import dominant_launches, pick_lines, regex_escape
from profkit.explain import hotlines

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
SOURCE = FIXTURES / "fx_source.ncu-rep.xz"
RUN = "rmsnorm-20261201-000553-vm-ffe590"  # a committed H200 run with counters
WIDE = {"COLUMNS": "100"}


def invoke(*args: object, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args], env=env)


def ok(result: Result) -> Result:
    assert result.exit_code == 0, (result.output, result.exception)
    return result


@pytest.fixture(scope="module")
def fx(ncu_tables: Callable):
    return ncu_tables("fx_source")


# --- a bare report --------------------------------------------------------------------------------


def test_explain_names_each_launchs_hot_line(fx) -> None:
    out = ok(invoke("explain", SOURCE, env=WIDE)).output
    found = hotlines.by_launch(fx.source_lines)
    for launch in (0, 1, 2):
        assert " ".join(found[launch].headline.split()) in " ".join(out.split())
    assert "line 23 (p1.py)" in out and "long-scoreboard stalls" in out


def test_explain_case_prints_the_per_line_table(fx) -> None:
    out = ok(invoke("explain", SOURCE, "--case", "hist", env=WIDE)).output
    hist = fx.source_lines[fx.source_lines.launch == 2].sort_values("samples", ascending=False)
    for line, text in zip(hist.line, hist.source, strict=True):  # 4 lines: all shown
        assert f"p1.py:{line}  " in out and text in out
    assert out.index("p1.py:23") < out.index("p1.py:21")  # most samples first
    assert "wide_row" not in out.replace("-" * 10, "").split("hist")[1]


def test_explain_json_carries_the_lines(fx) -> None:
    data = json.loads(ok(invoke("explain", SOURCE, "--format", "json")).output)
    entries = {e["launch"]: e for e in data["source_lines"]}
    assert sorted(entries) == [0, 1, 2]
    assert entries[2]["hot"]["line"] == 23 and entries[2]["stall"] == "long_scoreboard"
    assert entries[0]["local_inst"] == pytest.approx(
        fx.source_lines[fx.source_lines.launch == 0].local_inst.sum()
    )


def test_explain_markdown_carries_the_hot_line() -> None:
    out = ok(invoke("explain", SOURCE, "--format", "markdown")).output
    assert "*Source:* line 23 (p1.py)" in out


def test_a_report_without_source_counters_says_not_measured() -> None:
    out = ok(invoke("explain", FIXTURES / "fx_rmsnorm.ncu-rep.xz", "--case", "triton")).output
    assert "source: not measured" in " ".join(out.split())
    default = ok(invoke("explain", FIXTURES / "fx_rmsnorm.ncu-rep.xz")).output
    assert "source" not in default.lower().replace("resource", "")  # nothing in the default view
    assert "source_lines" not in json.loads(
        ok(invoke("explain", FIXTURES / "fx_rmsnorm.ncu-rep.xz", "--format", "json")).output
    )


# --- a stored run ---------------------------------------------------------------------------------


@pytest.fixture
def run_with_lines(tmp_path: Path, fx) -> tuple[Path, str]:
    """A committed H200 run, copied, with a source_lines.csv. Constructed: fx_source's hist
    launch stands for the Triton case's dominant launch (no run with --source is stored yet)."""
    root = tmp_path / "profiles"
    shutil.copytree(run_path(RUN), root / RUN)
    run = store.load(root / RUN)
    dominant = dominant_launches(run.kernels)
    triton = dominant[dominant.variant == "triton"].iloc[-1]
    lines = fx.source_lines[fx.source_lines.launch == 2].assign(
        case=triton.case, launch=int(triton.launch), kernel_name=triton.kernel_name
    )
    lines.to_csv(root / RUN / store.SOURCE_LINES, index=False)
    return root, str(triton.case)


def test_a_run_with_source_lines(run_with_lines: tuple[Path, str]) -> None:
    root, case = run_with_lines
    run = store.load(root / RUN)
    assert run.source_lines is not None and (run.source_lines.case == case).all()
    assert run.source_lines.source.map(type).eq(str).all()  # text read back as text
    _, _, dtype, shape = case.split(".")[:4]
    out = ok(invoke("explain", RUN, "--profiles", root, env=WIDE)).output
    assert f"source at {dtype} {shape}: line 23 (p1.py)" in out  # the default view: one line
    detail = ok(
        invoke("explain", RUN, "--profiles", root, "--case", f"triton {dtype} {shape}", env=WIDE)
    ).output
    assert "source: line 23 (p1.py)" in detail and "tl.atomic_add(" in detail
    other = ok(
        invoke("explain", RUN, "--profiles", root, "--case", f"eager {dtype} {shape}", env=WIDE)
    ).output
    assert "line 23" not in other  # a case without lines says nothing about them


def test_a_run_without_source_lines_says_not_measured() -> None:
    out = ok(invoke("explain", run_path(RUN), "--case", "triton", env=WIDE)).output
    assert "source: not measured" in " ".join(out.split())


def test_a_damaged_source_lines_file_is_left_out(run_with_lines: tuple[Path, str]) -> None:
    root, _ = run_with_lines
    (root / RUN / store.SOURCE_LINES).write_text("nothing,useful\n1,2\n")
    result = CliRunner().invoke(cli, ["explain", RUN, "--profiles", str(root)])
    assert result.exit_code == 0
    assert f"{store.SOURCE_LINES} lacks the column(s)" in result.output


def test_the_dashboard_shows_hot_lines(run_with_lines: tuple[Path, str], tmp_path: Path) -> None:
    root, case = run_with_lines
    page = tmp_path / "page.html"
    ok(invoke("dashboard", RUN, "--profiles", root, "--out", page))
    html = page.read_text()
    assert "Hot source lines" in html and f"<h4>{case}: " in html
    assert "tl.atomic_add(H + (x % NB), 1, mask=offs &lt; n)" in html
    plain = tmp_path / "plain.html"
    ok(invoke("dashboard", run_path(RUN), "--profiles", root, "--out", plain))
    assert "Hot source lines" not in plain.read_text()


# --- capture --source -----------------------------------------------------------------------------


@pytest.mark.parametrize("flag", ["--no-counters", "--interpret"])
def test_source_needs_the_counter_pass(flag: str) -> None:
    result = CliRunner().invoke(cli, ["capture", "rmsnorm", "--source", flag])
    assert result.exit_code == 2
    assert "--source needs the counter pass" in result.output and flag in result.output
    assert "Traceback" not in result.output


def test_regex_escape_keeps_names_literal() -> None:
    assert (
        regex_escape("rmsnorm.triton.float16.4096x8192") == r"rmsnorm\.triton\.float16\.4096x8192"
    )
    assert regex_escape("void at::f<(int)4>") == r"void at::f<\(int\)4>"


def test_pick_lines_numbers_launches_as_kernels_csv(fx) -> None:
    # constructed: fx_source's launches as if captured in two cases' ranges
    names = {0: "k.a.float32.8", 1: "k.a.float32.8", 2: "k.b.float32.8"}
    source_kernels = fx.kernels.assign(case=fx.kernels.launch.map(names))
    lines = fx.source_lines.assign(case=fx.source_lines.launch.map(names))
    dominant = pd.DataFrame(
        [
            {"case": "k.a.float32.8", "kernel_name": "wide_row", "launch": 7},
            {"case": "k.b.float32.8", "kernel_name": "hist", "launch": 9},
        ]
    )
    picked = pick_lines(lines, source_kernels, dominant)
    assert sorted(picked.launch.unique()) == [7, 9]
    wide = source_kernels[source_kernels.kernel_name == "wide_row"]
    longer = int(wide.loc[wide.ncu_duration_ms.idxmax(), "launch"])
    assert picked[picked.launch == 7].samples.sum() == lines[lines.launch == longer].samples.sum()


def test_show_lines(fx) -> None:
    out = ok(invoke("show", SOURCE, "--lines", "--format", "csv")).output
    from io import StringIO

    shown = pd.read_csv(StringIO(out))
    assert len(shown) == len(fx.source_lines)
    assert shown.inst_executed.sum() == pytest.approx(fx.source_lines.inst_executed.sum())
    table = ok(invoke("show", SOURCE, "--lines", env=WIDE)).output
    assert "tl.store(Y + row * N + offs, y * x)" in table


def test_show_lines_without_any_is_one_line_error() -> None:
    result = CliRunner().invoke(cli, ["show", str(FIXTURES / "fx_rmsnorm.ncu-rep.xz"), "--lines"])
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines() == [
        f"error: no source lines in this report: {hotlines.NOT_MEASURED}"
    ]
