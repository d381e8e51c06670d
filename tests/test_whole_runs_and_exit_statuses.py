"""Runs that are whole or refused, honest exit statuses, specs checked when they load, and the
faults a new user found (each test here failed on the code before its fix; issue 22)."""

from __future__ import annotations

import os

os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported (see test_cli.py)

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402
from click.testing import CliRunner, Result  # noqa: E402

from profkit.cli import cli  # noqa: E402


@pytest.fixture(autouse=True)
def stored_profiles(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI reads the stored runs (tests/data/runs and the example) as its profiles/ folder."""
    from stored_runs import all_runs

    monkeypatch.setenv("PROFKIT_PROFILES", str(all_runs()))


def invoke(*args: object) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args])


def one_line_error(result: Result, *words: str) -> str:
    assert result.exit_code not in (0, None), result.output
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: "), lines[0]
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


# a CPU-only spec (no Triton: fast); FIELDS is replaced per test
SPEC = """
import time
import torch
from profkit.spec import KernelSpec, Variant

def make_inputs(shape, dtype, device, generator):
    return {{"x": torch.randn(shape, generator=generator, device=device).to(getattr(torch, dtype))}}

def double(i):
    return i["x"] * 2

def sleepy(i):
    time.sleep(30)
    return i["x"] * 2

FIELDS = dict(
    name="tiny", description="y = 2 x",
    variants=(Variant("mine", double), Variant("torch", lambda i: i["x"] + i["x"], baseline=True)),
    make_inputs=make_inputs, reference=lambda i: i["x"].double() * 2,
    dtypes=("float32",), shapes=((8, 8),),
    tolerances={{"float32": (1e-6, 1e-6)}},
    bytes_moved=lambda s, e: 2 * s[0] * s[1] * e, flops=lambda s: s[0] * s[1],
    interpret_shapes=((8, 8), (3, 5)),
)
FIELDS.update({extra})
TINY = KernelSpec(**FIELDS)
"""


def spec_file(tmp_path: Path, extra: str = "") -> Path:
    path = tmp_path / "tiny_spec.py"
    path.write_text(SPEC.format(extra=extra))
    return path


def capture(tmp_path: Path, extra: str = "", *args: object) -> Result:
    spec = spec_file(tmp_path, extra)
    out = tmp_path / "runs"
    return invoke("capture", "tiny", "--from", spec, "--interpret", "--out", out, *args)


# --- specs validated when they load (items 1, 6, 9) ----------------------------------------------


@pytest.mark.parametrize(
    "extra, words",
    [
        ("variants=()", ["variants", "at least one variant"]),  # item 1
        (
            "variants=(Variant('mine', double), Variant('mine', double, baseline=True))",
            ["variants", "'mine'", "more than once"],
        ),  # item 6
        ("tolerances={}", ["tolerances", "float32"]),  # item 9
        ("shapes=()", ["shapes", "at least one shape"]),
        ("interpret_shapes=()", ["interpret_shapes", "at least one shape"]),
        ("reference=3", ["reference", "callable"]),
        ("make_inputs=None", ["make_inputs", "callable"]),
        ("variants=(Variant('mine', 'double'),)", ["variants", "'mine'", "fn", "callable"]),
        ("variants=('mine',)", ["variants", "Variant"]),
        ("dtypes=()", ["dtypes", "at least one dtype"]),
        ("dtypes=('float33',)", ["dtypes", "float33"]),
        ("tolerances={'float32': 1e-6}", ["tolerances", "float32", "(atol, rtol)"]),
    ],
)
def test_a_bad_spec_is_refused_when_it_loads(tmp_path: Path, no_gpu: None, extra, words) -> None:
    line = one_line_error(capture(tmp_path, extra), "tiny", *words)
    assert "Traceback" not in line and not (tmp_path / "runs").exists()


# --- exit statuses (item 3) ----------------------------------------------------------------------

WRONG_MINE = (
    "variants=(Variant('mine', lambda i: i['x'] * 3), Variant('torch', double, baseline=True))"
)


@pytest.mark.parametrize(
    "extra, status, words",
    [
        ("", 0, []),
        (WRONG_MINE, 3, ["2 of 4 case(s) incorrect", "tiny.mine.float32.8x8"]),
        ("reference=lambda i: i['x'].double() * 5", 4, ["4 of 4", "nothing could be measured"]),
        ("variants=(Variant('mine', lambda i: 1 / 0),)", 4, ["ZeroDivisionError"]),
        ("variants=(Variant('mine', lambda i: i['x'] * float('nan')),)", 4, ["non-finite"]),
        ("variants=(Variant('mine', lambda i: i['x'][:1] * 2),)", 4, ["shape"]),
        ("variants=(Variant('mine', lambda i: None),)", 4, ["returned None"]),
        ("make_inputs=lambda *a: 1 / 0", 4, ["make_inputs", "ZeroDivisionError"]),
    ],
)
def test_capture_exit_status_says_whether_every_case_is_correct(
    tmp_path: Path, no_gpu: None, extra: str, status: int, words: list[str]
) -> None:
    from profkit import exitcodes

    assert (exitcodes.INCORRECT, exitcodes.NOTHING_MEASURED) == (3, 4)
    result = capture(tmp_path, extra)
    assert result.exit_code == status, result.output
    assert isinstance(result.exception, SystemExit) or result.exception is None
    for word in words:
        assert word in result.stderr, result.stderr
    assert "Traceback" not in result.output
    assert len(list((tmp_path / "runs").iterdir())) == 1  # the run is stored either way


def test_exit_statuses_are_documented() -> None:
    from profkit import exitcodes

    helptext = invoke("--help").stdout
    readme = (Path(__file__).parents[1] / "README.md").read_text()
    for code in (exitcodes.INCORRECT, exitcodes.NOTHING_MEASURED, exitcodes.SLOWER):
        assert f"| {code} |" in readme
        assert f"{code} " in helptext
    assert "--fail-on" in invoke("compare", "--help").stdout


def test_compare_fail_on_slower(tmp_path: Path) -> None:
    """B slower than A at every case by the CI rule -> exit 5; A against itself -> 0."""
    from stored_runs import stored_run

    a, b = (
        stored_run("rmsnorm-20261201-000553-vm-ffe590"),
        stored_run("rmsnorm-20261201-000450-vm-82b6b9"),
    )
    result = invoke("compare", a, b, "--format", "csv", "--fail-on", "slower")
    import io

    import pandas as pd

    flags = pd.read_csv(io.StringIO(result.stdout))["flag"]
    assert result.exit_code == (5 if (flags == "slower").any() else 0), result.stderr
    same = invoke("compare", a, a, "--format", "csv", "--fail-on", "slower")
    assert same.exit_code == 0, same.output
    # a run made slower: every device sample of B scaled by 1.5
    slow = _slowed_copy(a, tmp_path / "slow", 1.5)
    result = invoke("compare", a, slow, "--fail-on", "slower")
    assert result.exit_code == 5, result.output
    assert "significantly slower" in result.stderr
    assert invoke("compare", a, slow).exit_code == 0  # without --fail-on: a report, status 0


def _slowed_copy(src: Path, dst: Path, factor: float) -> Path:
    import shutil

    import pandas as pd

    from profkit import store

    shutil.copytree(src, dst)
    cases = pd.read_csv(dst / store.CASES, dtype={"shape": str})
    for col in ("device_p50_ms", "device_p95_ms", "device_p5_ms", "device_iqr_ms"):
        cases[col] *= factor
    cases.to_csv(dst / store.CASES, index=False)
    samples = pd.read_csv(dst / store.SAMPLES)
    samples.loc[samples.kind == "device", "ms"] *= factor
    samples.to_csv(dst / store.SAMPLES, index=False, compression="gzip")
    store.seal(dst)  # the checksums of the edited files, as a capture would have written them
    return dst


# --- a manifest that vouches for the run (items 2, 4, 5) ------------------------------------------


@pytest.fixture(scope="module")
def sealed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A GPU run as capture now stores it: a committed run, sealed with its counts and
    checksums (the tables are the committed ones, untouched)."""
    import shutil

    from stored_runs import stored_run

    from profkit import store

    dst = tmp_path_factory.mktemp("sealed") / "rmsnorm-20261201-000553-vm-ffe590"
    shutil.copytree(stored_run(dst.name), dst)
    store.seal(dst)
    return dst


def damaged(sealed: Path, tmp_path: Path, name: str, how: str) -> Path:
    import shutil

    run = tmp_path / sealed.name
    shutil.copytree(sealed, run)
    f = run / name
    if how == "missing":
        f.unlink()
    elif how == "half":
        f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])
    elif how == "edited":
        f.write_bytes(f.read_bytes().replace(b"True", b"Fals", 1))
    return run


COMMANDS = [["show"], ["explain"], ["compare", "{run}"], ["dashboard", "--out", "{tmp}/d.html"]]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
@pytest.mark.parametrize(
    "name, how, words",
    [
        ("samples.csv.gz", "half", ["samples.csv.gz", "cut short"]),  # item 2
        ("cases.csv", "half", ["cases.csv", "cut short"]),  # item 4
        ("kernels.csv", "missing", ["kernels.csv", "missing"]),  # item 5
        ("kernels.csv", "half", ["kernels.csv", "cut short"]),  # item 5
        ("cases.csv", "edited", ["cases.csv", "checksum"]),
    ],
)
def test_a_damaged_run_is_refused(
    sealed: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    command: list[str],
    name: str,
    how: str,
    words: list[str],
) -> None:
    # the run is named by its path: no stored run takes part, and the dashboard's history would
    # load all of them (seconds) before it refuses this one
    (tmp_path / "none").mkdir()
    monkeypatch.setenv("PROFKIT_PROFILES", str(tmp_path / "none"))
    run = damaged(sealed, tmp_path, name, how)
    args = [a.format(run=run, tmp=tmp_path) for a in command]
    line = one_line_error(invoke(args[0], run, *args[1:]), run.name, "damaged", *words)
    assert "--force" in line


def test_force_reads_what_survives_clearly_marked(sealed: Path, tmp_path: Path) -> None:
    run = damaged(sealed, tmp_path, "cases.csv", "half")
    result = invoke("show", run, "--force", "--format", "table")
    assert result.exit_code == 0, result.output
    assert "DAMAGED RUN (read with --force" in result.stdout
    assert "warning: DAMAGED run" in result.stderr and "cases.csv is cut short" in result.stderr
    import io

    import pandas as pd

    csv = pd.read_csv(io.StringIO(invoke("show", run, "--force", "--format", "csv").stdout))
    assert csv.pop("damaged").str.startswith(f"{run.name}: DAMAGED RUN").all()  # every row marked
    whole = invoke("show", sealed, "--format", "csv").stdout
    survived = csv.to_csv(index=False).splitlines()
    assert 1 < len(survived) < len(whole.splitlines())
    assert all(line in whole.splitlines() for line in survived)  # no cut row shown as valid
    explained = invoke("explain", run, "--force")
    assert explained.exit_code == 0 and explained.stdout.startswith("DAMAGED RUN")
    page = tmp_path / "d.html"
    assert invoke("dashboard", run, "--force", "--out", page).exit_code == 0
    assert "DAMAGED RUN" in page.read_text()


def test_old_runs_without_checksums_read_as_unverified(tmp_path: Path) -> None:
    """Stored before checksums: readable, said unverified; a cut or a missing table is still
    found from the run's own options and counters block."""
    import shutil

    from stored_runs import stored_run

    src = stored_run("rmsnorm-20261201-000553-vm-ffe590")
    out = invoke("show", src, "--format", "table").stdout
    assert "files: unverified (stored before runs carried checksums)" in out
    for name, how, words in [
        ("cases.csv", "half", ["cases.csv", "cut short"]),
        ("kernels.csv", "missing", ["kernels.csv", "missing"]),
        ("samples.csv.gz", "half", ["samples.csv.gz", "cut short"]),
    ]:
        run = tmp_path / how / name / src.name
        shutil.copytree(src, run)
        f = run / name
        if how == "missing":
            f.unlink()
        else:
            f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])
        one_line_error(invoke("explain", run), "damaged", *words)
    # a cut exactly at a row's end: the options' case count finds it
    run = tmp_path / "rows" / src.name
    shutil.copytree(src, run)
    lines = (run / "cases.csv").read_text().splitlines(keepends=True)
    (run / "cases.csv").write_text("".join(lines[:50]))
    one_line_error(invoke("show", run), "damaged", "cases.csv holds 49 cases", "make 96")


def test_a_new_run_vouches_for_itself(tmp_path: Path, no_gpu: None) -> None:
    import json

    assert capture(tmp_path).exit_code == 0
    [run] = (tmp_path / "runs").iterdir()
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["counts"] == {"cases": 4}
    assert set(manifest["files"]) == {"cases.csv"}
    assert "files: 1 verified" in invoke("show", run, "--format", "table").stdout


# --- items 7, 8, 10, 16, 18 -----------------------------------------------------------------------


def _profiles() -> Path:
    from stored_runs import all_runs

    return all_runs()


def test_history_of_another_kernel_is_refused() -> None:  # item 7
    p = _profiles()
    one_line_error(
        invoke("explain", "rmsnorm", "--history", "sum", "--profiles", p),
        "--history",
        "sum",
        "rmsnorm",
    )
    one_line_error(
        invoke("explain", "rmsnorm", "--history", "nonesuch", "--profiles", p), "nonesuch"
    )


def test_compare_across_kernels_is_refused() -> None:  # item 8
    one_line_error(
        invoke("compare", "rmsnorm", "sum", "--profiles", _profiles()),
        "no case in common",
        "rmsnorm",
        "sum",
    )


def test_compare_against_an_interpret_run_says_so(tmp_path: Path, no_gpu: None) -> None:
    import shutil

    from stored_runs import stored_run

    runs = tmp_path / "runs"
    assert capture(tmp_path).exit_code == 0
    [check] = runs.iterdir()
    gpu = stored_run("rmsnorm-20261201-000553-vm-ffe590")
    shutil.copytree(gpu, runs / gpu.name)
    # another kernel's interpret run: refused, naming both
    one_line_error(invoke("compare", gpu.name, check.name, "--profiles", runs), "interpret run")
    # an interpret run of the same kernel and case: compared, and said loudly
    interp = tmp_path / "interp"
    args = ["--variant", "eager", "--dtype", "fp32", "--shape", "1x4096", "--out", interp]
    out = invoke("capture", "rmsnorm", "--interpret", *args)
    assert out.exit_code == 0, out.output
    [rms] = interp.iterdir()
    result = invoke("compare", gpu, rms)
    assert result.exit_code == 0, result.output
    assert "interpret run" in result.stderr and "no times to compare" in result.stderr


def test_case_accepts_dtype_aliases() -> None:  # item 10
    p = _profiles()
    long = invoke("explain", "rmsnorm", "--profiles", p, "--case", "bfloat16 16x8192")
    short = invoke("explain", "rmsnorm", "--profiles", p, "--case", "bf16 16x8192")
    assert long.exit_code == 0, long.output
    assert short.exit_code == 0, short.output
    assert short.stdout == long.stdout


def test_a_kernel_with_only_interpret_runs(tmp_path: Path, no_gpu: None) -> None:  # item 16
    assert capture(tmp_path).exit_code == 0
    [run] = (tmp_path / "runs").iterdir()
    line = one_line_error(invoke("show", "tiny", "--profiles", tmp_path / "runs"))
    assert "interpret run" in line and run.name in line and "by name" in line


def test_closed_stdout_is_an_error() -> None:  # item 18
    import subprocess

    root = Path(__file__).parents[1]
    for command in ("list >&-", "show --profiles profiles >&-", "list | true"):
        done = subprocess.run(
            ["bash", "-c", f"python3 -m profkit {command}; echo rc=$? >&2"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=120,
        )
        rc = int(done.stderr.rsplit("rc=", 1)[1])
        if "| true" in command:
            continue  # a reader that stops early: no traceback (checked below)
        assert rc == 1, (command, done.stderr)
        assert "error: " in done.stderr and "Traceback" not in done.stderr
    assert "Traceback" not in done.stderr


# --- a per-case time limit (item 17) --------------------------------------------------------------


def test_a_hung_case_is_reported_and_skipped(tmp_path: Path, no_gpu: None) -> None:
    import json
    import time

    from profkit import store

    extra = "variants=(Variant('mine', double), Variant('slow', sleepy, baseline=True))"
    started = time.monotonic()
    result = capture(tmp_path, extra, "--case-timeout", "1.5")
    took = time.monotonic() - started
    assert result.exit_code == 3, result.output  # some cases incorrect (timed out)
    assert took < 20, took  # the 30 s sleeps were not waited for
    assert "timed out after 1.5 s" in result.stderr
    [run] = (tmp_path / "runs").iterdir()
    cases = store.load(run).cases
    slow = cases[cases.variant == "slow"]
    assert len(slow) == 2 and not slow.correct.astype(bool).any()
    assert slow.error.str.contains("timed out after 1.5 s").all()
    assert cases[cases.variant == "mine"].correct.astype(bool).all()  # the others still ran
    assert json.loads((run / "manifest.json").read_text())["options"]["case_timeout_s"] == 1.5
    (tmp_path / "bad").mkdir()
    one_line_error(capture(tmp_path / "bad", "", "--case-timeout", "0"), "--case-timeout")


# --- a suspect reference (item 19) ----------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["terminal", "markdown"])
def test_when_every_variant_disagrees_the_reference_is_the_suspect(
    tmp_path: Path, no_gpu: None, fmt: str
) -> None:
    assert capture(tmp_path, "reference=lambda i: i['x'].double() * 5").exit_code == 4
    [run] = (tmp_path / "runs").iterdir()
    text = invoke("explain", run, "--format", fmt).stdout
    assert "the reference is the suspect" in text, text
    assert "fix correctness first" not in text
    # one variant wrong, the baseline right: the variant is what to fix
    one = tmp_path / "one"
    one.mkdir()
    assert capture(one, WRONG_MINE).exit_code == 3
    [run] = (one / "runs").iterdir()
    text = invoke("explain", run, "--format", fmt).stdout
    assert "suspect" not in text and "fix correctness first" in text, text


# --- explain's words and length (items 13, 14, 15) ------------------------------------------------


def explain80(*args: object) -> str:
    result = CliRunner().invoke(
        cli, ["explain", *map(str, args), "--profiles", _profiles()], env={"COLUMNS": "80"}
    )
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.parametrize("kernel", ["matmul", "decode", "sum", "rmsnorm", "softmax"])
def test_default_explain_fits_a_screen_per_kernel(kernel: str) -> None:  # item 13
    lines = explain80(kernel).splitlines()
    assert len(lines) <= 50, len(lines)
    assert all(len(line) <= 80 for line in lines)
    # nothing deleted: the detail views still hold every finding
    assert len(explain80(kernel, "--verbose").splitlines()) > len(lines)


def test_the_words_are_defined_and_not_contradictory() -> None:  # item 14
    text = " ".join(explain80("matmul").split())
    assert "ACTIVE TRACK" in text and "ACTIVE TRACK: neither a win" in text
    assert "measurably slower" not in text and "real but negligible gaps" in text
    withheld = " ".join(explain80("rmsnorm-20261130-184426-vm-c9f8d5").split())
    if "withheld: " in withheld:
        assert "withheld: a step already tried without effect" in withheld
    readme = (Path(__file__).parents[1] / "README.md").read_text()
    assert "**ACTIVE TRACK**" in readme and "**withheld**" in readme


def test_a_device_time_loss_is_not_told_to_cut_the_host_cost() -> None:  # item 14
    """The constructed mixed run of test_explain: triton loses to native on device time at a
    short, host-bound case (its launch-cost step)."""
    from test_explain import mixed_run

    from profkit.explain.model import Action, FindingKind
    from profkit.explain.phrases import advice_text
    from profkit.explain.run import explain_run

    report = explain_run(mixed_run())
    told = [
        advice_text(s)
        for v in report
        if v.kind == FindingKind.VERDICT
        and v.evidence.get("measure", "device time") == "device time"
        for s in v.next
        if s.action == Action.CUDA_GRAPH
    ]
    assert told, "this run's verdicts carry a launch-cost step"
    assert not any("cut the host cost" in t for t in told), told
    assert all("device time" in t for t in told)


def test_urls_are_never_broken_mid_word() -> None:  # item 15
    import re

    text = explain80("matmul", "--case", "triton bf16 4096x4096x4096", "--verbose")
    urls = re.findall(r"https?://\S+", text)
    assert urls, "the case's NVIDIA rules cite their documentation"
    for url in urls:
        assert re.fullmatch(r"https?://[\w./#?=&%-]+[\w/#-]\)?\.?", url), url


def test_show_a_report_at_80_columns_keeps_the_case_column() -> None:  # item 12
    fixture = Path(__file__).parent / "fixtures" / "fx_rmsnorm.ncu-rep.xz"
    result = CliRunner().invoke(cli, ["show", str(fixture)], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines)
    header = lines[1]
    assert "nvtx_range" in header and "kernel_name" in header
    assert "rmsnorm.triton.float16.4096x8192" in result.stdout
    assert "nvtx_range," not in result.stdout  # not among the columns left out


def test_an_early_end_of_file_is_an_error_not_an_interrupt(
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # item 2: click turns EOFError into Abort, which read as Ctrl-C (130)
    from profkit import store

    def cut(*args, **kwargs):
        raise EOFError("Compressed file ended before the end-of-stream marker was reached")

    monkeypatch.setattr(store, "load", cut)
    line = one_line_error(invoke("show", "--profiles", _profiles()), "ended early")
    assert "aborted" not in line
    assert invoke("show", "--profiles", _profiles()).exit_code == 1
