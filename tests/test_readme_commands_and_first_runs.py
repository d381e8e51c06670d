"""What a new user meets first: the README's commands as written, `list` without torch,
interpret runs kept apart, tables that fit the terminal, and input checked before any work."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

# as in test_cli.py: before anything imports triton in this process
os.environ["TRITON_INTERPRET"] = "1"

import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from click.testing import CliRunner, Result  # noqa: E402
from conftest import one_line_error
from stored_runs import v1_v2_profiles

from profkit import compare, store  # noqa: E402
from profkit.cli import cli  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PROFILES = v1_v2_profiles()  # the two schema-1 RMSNorm runs alone
NEWEST = "rmsnorm-20261130-014917-vm-4bc5"
OLDER = "rmsnorm-20261130-014110-vm-83a4"
TEST_COMMAND = "bash tests/install.sh && python3 -m pytest -q"


def invoke(*args: object, columns: int | None = None) -> Result:
    env = {"COLUMNS": str(columns)} if columns else None
    return CliRunner().invoke(cli, [str(a) for a in args], env=env)


# --- 1. the README's commands --------------------------------------------------------------------


def _bash_blocks(section: str) -> list[str]:
    text = (ROOT / "README.md").read_text()
    body = text.split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.*?)```", body, re.S)


def test_readme_test_command_installs_what_the_tests_need() -> None:
    assert [b.strip() for b in _bash_blocks("Tests")] == [TEST_COMMAND]
    install = (ROOT / "tests" / "install.sh").read_text()
    for need in ("torch==2.13.0", '"triton==3.6.0"', '"numpy<2.4"', "nvtx", '".[test]"'):
        assert need in install, need
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'test = \[[^\]]*"pytest', pyproject)
    # CI runs exactly the README's line
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line.strip()]
    assert ci[-1] == TEST_COMMAND
    assert not [line for line in ci if "pip install" in line]


def _readme_block(section: str, lang: str) -> str:
    body = (ROOT / "README.md").read_text().split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(rf"```{lang}\n(.*?)```", body, re.S)
    return block


def test_readme_sample_is_what_explain_prints_on_the_example_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's pasted output is today's: `profkit explain rmsnorm` on a fresh clone (no runs
    under profiles/) reads the shipped example run, says so on stderr, and prints the sample."""
    monkeypatch.chdir(tmp_path)  # a folder without profiles/
    monkeypatch.delenv("PROFKIT_PROFILES", raising=False)
    result = invoke("explain", "rmsnorm", columns=80)
    assert result.exit_code == 0, result.output
    assert result.stdout == _readme_block("What explain says", "text")
    note = result.stderr.splitlines()  # two lines that fit 80 columns (issue 31)
    assert (
        note[0] == "note: no runs under profiles/ yet: reading the example run shipped with profkit"
    )
    assert len(note) == 2 and len(note[1]) <= 80 and "profkit capture KERNEL" in note[1]


def test_runs_under_profiles_or_a_chosen_folder_hide_the_example(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PROFKIT_PROFILES", str(tmp_path / "mine"))  # chosen, empty: no fallback
    one_line_error(invoke("explain"), "no runs stored under")
    monkeypatch.delenv("PROFKIT_PROFILES")
    shutil.copytree(PROFILES / NEWEST, tmp_path / "profiles" / NEWEST)
    result = invoke("show", "--format", "json")
    assert result.exit_code == 0 and "example" not in result.stderr
    assert {row["kernel"] for row in json.loads(result.stdout)} == {"rmsnorm"}


def test_readme_kernelspec_loads_without_a_gpu(tmp_path: Path) -> None:
    (tmp_path / "my_kernels.py").write_text(_readme_block("Write a KernelSpec", "python"))
    done = _without_torch("list", "--from", str(tmp_path / "my_kernels.py"))
    assert done.returncode == 0, done.stderr
    assert "scale2" in done.stdout and "triton, torch*" in done.stdout


def _without_torch(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """The CLI in a fresh interpreter where torch and triton cannot be imported."""
    # a finder that refuses them, as a venv without them would; not sys.modules[...] = None,
    # which libraries that probe sys.modules for torch (scipy's array API layer) trip over
    code = (
        "import sys\n"
        "class NoTorch:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('torch', 'triton'):\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, NoTorch())\n"
        f"sys.argv = ['profkit', *{list(args)!r}]\nfrom profkit.cli import main\nmain()\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "100"}
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, env=env, timeout=120
    )


def test_list_needs_no_torch() -> None:
    done = _without_torch("list")
    assert done.returncode == 0, done.stderr
    assert {"rmsnorm", "decode"} <= set(done.stdout.splitlines())  # one block per lab kernel
    assert "triton, eager*, native*, compile*" in done.stdout
    assert "16384x8192" in done.stdout


def test_list_from_a_user_file_needs_no_torch(tmp_path: Path) -> None:
    spec = (ROOT / "tests" / "test_cli.py").read_text().split('USER_SPEC = """', 1)[1]
    (tmp_path / "mine.py").write_text(spec.split('"""', 1)[0])
    done = _without_torch("list", "--from", str(tmp_path / "mine.py"))
    assert done.returncode == 0, done.stderr
    assert "scale2" in done.stdout and "triton, torch*" in done.stdout


def test_explain_needs_no_torch() -> None:
    done = _without_torch("explain", "--profiles", str(PROFILES))
    assert done.returncode == 0, done.stderr
    assert "rmsnorm" in done.stdout


def test_list_falls_back_to_importing_a_spec_built_in_code(tmp_path: Path) -> None:
    user = (ROOT / "tests" / "test_cli.py").read_text().split('USER_SPEC = """', 1)[1]
    user = user.split('"""', 1)[0].replace('name="scale2"', 'name="scale" + str(2)')
    (tmp_path / "mine.py").write_text(user)
    out = invoke("list", "--from", tmp_path / "mine.py").stdout
    assert out.splitlines()[0] == "scale2"


def test_from_file_that_exits_is_one_line(tmp_path: Path) -> None:
    quits = tmp_path / "quits.py"
    quits.write_text("import sys\nsys.exit(3)\n")
    one_line_error(invoke("list", "--from", quits), str(quits), "sys.exit(3)")
    result = invoke("capture", "x", "--from", quits, "--interpret", "--out", tmp_path / "runs")
    one_line_error(result, "sys.exit(3)")
    assert result.exit_code == 1


# --- 2. interpret runs ---------------------------------------------------------------------------


def _interpret_run(root: Path, newest: bool = True) -> Path:
    """A copy of the newest GPU run made to look like an interpret run stored after it
    (constructed: mode interpret, every case correct and untimed)."""
    path = shutil.copytree(PROFILES / NEWEST, root / "rmsnorm-20261201-000000-cpu-0001")
    manifest = json.loads((path / "manifest.json").read_text())
    manifest.update(run_id=path.name, mode="interpret", created="2026-12-01T00:00:00+00:00")
    manifest["counters"] = {"status": "skipped", "reason": "interpret mode: correctness only"}
    (path / "manifest.json").write_text(json.dumps(manifest))
    cases = pd.read_csv(path / "cases.csv")
    timing = ("reps", "p50_ms", "p95_ms", "p5_ms", "spread_ms", "gbps", "tflops", "pct_peak_bw",
              "pct_peak_flops")  # fmt: skip
    for col in cases.columns:  # schema 1 or 2 names
        if col.removeprefix("device_") in timing or col.replace("iqr", "spread") in timing:
            cases[col] = None
    cases.to_csv(path / "cases.csv", index=False)
    return path


def test_an_interpret_run_never_becomes_the_default(tmp_path: Path) -> None:
    root = tmp_path / "profiles"
    shutil.copytree(PROFILES / NEWEST, root / NEWEST)
    check = _interpret_run(root)
    assert store.list_runs(root)[-1] == check  # it is the newest ...
    assert store.resolve(None, root) == root / NEWEST  # ... but not the default
    for command in ("show", "explain"):
        out = invoke(command, "--profiles", root, "--format", "json").stdout
        assert json.loads(out), command
    shown = invoke("show", "--profiles", root, columns=200).stdout
    assert shown.startswith(f"run {NEWEST}: rmsnorm on NVIDIA H200")
    # named, it is read, and said to be a correctness run
    named = invoke("show", check.name, "--profiles", root).stdout
    assert named.startswith(f"run {check.name}: rmsnorm interpret run (correctness only")
    # only interpret runs: a clear error that names one
    shutil.rmtree(root / NEWEST)
    one_line_error(invoke("show", "--profiles", root), "no GPU runs", "interpret", check.name)


def test_compare_says_untimed_not_failed(tmp_path: Path) -> None:
    check = _interpret_run(tmp_path)
    df = compare.compare_runs(store.load(PROFILES / NEWEST), store.load(check))
    assert set(df.flag) == {"untimed in B (interpret run)"}
    both = compare.compare_runs(store.load(check), store.load(check))
    assert set(both.flag) == {"untimed (interpret runs)"}
    out = invoke("compare", NEWEST, check, "--profiles", PROFILES, columns=120).stdout
    assert "failed" not in out and "untimed in B (interpret run)" in out
    # a case that really failed still says so
    cases = pd.read_csv(check / "cases.csv")
    cases.loc[0, "correct"] = False
    cases.to_csv(check / "cases.csv", index=False)
    df = compare.compare_runs(store.load(PROFILES / NEWEST), store.load(check))
    assert df.flag.iloc[0] == "failed in B" and df.flag.iloc[1] == "untimed in B (interpret run)"


# --- 3. output that fits the terminal ------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["show", "--profiles", PROFILES],
        ["compare", OLDER, NEWEST, "--profiles", PROFILES],
        ["list"],
        ["doctor", "--no-probe"],
    ],
    ids=["show", "compare", "list", "doctor"],
)
def test_fits_80_columns(args: list) -> None:
    out = invoke(*args, columns=80).stdout
    assert out.strip()
    too_wide = [line for line in out.splitlines() if len(line) > 80]
    assert not too_wide, too_wide[:3]


def test_show_drops_columns_rather_than_wrapping_rows() -> None:
    out = invoke("show", "--profiles", PROFILES, columns=80).stdout
    rows = [line for line in out.splitlines() if line.startswith("│")]
    assert len(rows) == 96  # one line per case: no cell wrapped onto a second line
    assert rows[0].split("│")[1:5] == [" triton  ", " float16  ", " 1x4096     ", " True    "]
    assert "column(s) left out to fit 80 columns" in out and "--format csv" in out
    wide = invoke("show", "--profiles", PROFILES, columns=250).stdout
    assert "left out" not in wide and "DRAM bytes" in wide


def test_compare_drops_columns_rather_than_wrapping_rows() -> None:
    out = invoke("compare", OLDER, NEWEST, "--profiles", PROFILES, columns=80).stdout
    variant = re.compile(r" ?(triton|eager|native|compile) ")
    rows = [line for line in out.splitlines() if variant.match(line)]
    assert len(rows) == 96
    assert all(re.search(r"(faster|slower|noise)\s*$", r) for r in rows)
    assert "left out to fit 80 columns" in out


# --- 5. input checked before any work ------------------------------------------------------------


@pytest.fixture
def no_sweep(monkeypatch: pytest.MonkeyPatch) -> None:
    import profkit.capture

    def fail(*args, **kwargs):
        raise AssertionError("the sweep started")

    monkeypatch.setattr(profkit.capture, "measure_cases", fail)


def test_repeated_options_are_measured_once(tmp_path: Path) -> None:
    out = tmp_path / "runs"
    args = ["--variant", "eager", "--variant", "eager", "--dtype", "fp32", "--dtype", "float32"]
    result = invoke("capture", "rmsnorm", "--interpret", "--out", out, *args,
                    "--shape", "4x64", "--shape", "4X64")  # fmt: skip
    assert result.exit_code == 0, result.output
    [path] = store.list_runs(out)
    cases = store.load(path).cases
    assert cases[["variant", "dtype", "shape"]].values.tolist() == [["eager", "float32", "4x64"]]
    notes = [line for line in result.stderr.splitlines() if line.startswith("note: ")]
    assert notes == [
        "note: --dtype float32 given 2 times: measured once",
        "note: --variant eager given 2 times: measured once",
        "note: --shape 4x64 given 2 times: measured once",
    ]


def test_absurd_shape_is_rejected_before_any_work(tmp_path: Path, no_sweep: None) -> None:
    out = tmp_path / "runs"
    result = invoke("capture", "rmsnorm", "--interpret", "--out", out,
                    "--shape", "99999999999x99999999999")  # fmt: skip
    one_line_error(result, "shape 99999999999x99999999999 is too large", "memory")
    assert not out.exists()


@pytest.mark.parametrize("value", ["-5", "0", "nan", "inf"])
def test_ncu_timeout_must_be_finite_and_positive(tmp_path: Path, value: str) -> None:
    result = invoke("capture", "rmsnorm", "--ncu-timeout", value, "--out", tmp_path / "runs")
    one_line_error(result, "Invalid value for '--ncu-timeout'", "finite")
    assert result.exit_code == 2 and not (tmp_path / "runs").exists()


@pytest.mark.parametrize("name", ["a/b", "<script>alert(1)</script>", "x[red]"])
def test_bad_kernel_names_are_rejected_before_the_sweep(
    tmp_path: Path, no_sweep: None, name: str
) -> None:
    user = (ROOT / "tests" / "test_cli.py").read_text().split('USER_SPEC = """', 1)[1]
    user = user.split('"""', 1)[0].replace('name="scale2"', f"name={name!r}")
    spec_file = tmp_path / "mine.py"
    spec_file.write_text(user)
    out = tmp_path / "runs"
    result = invoke("capture", name, "--from", spec_file, "--interpret", "--out", out)
    one_line_error(result, "kernel name", "letters, digits")
    assert not out.exists()


def test_bad_variant_name_is_rejected(tmp_path: Path, no_sweep: None) -> None:
    user = (ROOT / "tests" / "test_cli.py").read_text().split('USER_SPEC = """', 1)[1]
    user = user.split('"""', 1)[0].replace('Variant("torch"', 'Variant("torch/eager"')
    (tmp_path / "mine.py").write_text(user)
    result = invoke("capture", "scale2", "--from", tmp_path / "mine.py", "--interpret")
    one_line_error(result, "variant name 'torch/eager'")


# --- 6. smaller ones -----------------------------------------------------------------------------


def test_garbage_rules_csv_is_a_one_line_warning(tmp_path: Path) -> None:
    run = shutil.copytree(PROFILES / NEWEST, tmp_path / NEWEST)
    (run / "rules.csv").write_text("this is not\na rules table\n")
    result = invoke("explain", run, "--format", "json")
    assert result.exit_code == 0
    warnings = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(warnings) == 1
    assert warnings[0].startswith(f"warning: {run / 'rules.csv'} lacks the column(s) launch, case")
    assert store.load(run).rules is None
    # unparseable bytes: the same, not a failed run
    (run / "rules.csv").write_bytes(b'"unclosed,\n\x00\xff' * 50)
    result = invoke("show", run, "--format", "csv")
    assert result.exit_code == 0 and result.stderr.startswith("warning: ")
    # an intact run says nothing
    assert invoke("explain", PROFILES / NEWEST, "--format", "json").stderr == ""


def test_compare_with_text_in_the_p50_column_is_one_line(tmp_path: Path) -> None:
    run = shutil.copytree(PROFILES / NEWEST, tmp_path / NEWEST)
    cases = pd.read_csv(run / "cases.csv")
    p50 = "device_p50_ms" if "device_p50_ms" in cases else "p50_ms"  # schema 2 or 1
    cases[p50] = cases[p50].astype(object)
    cases.loc[3, p50] = "fast"
    cases.to_csv(run / "cases.csv", index=False)
    one_line_error(
        invoke("compare", PROFILES / OLDER, run), "device_p50_ms holds text", "'fast'", "row 4"
    )


def test_bad_xz_report_names_the_users_file(tmp_path: Path) -> None:
    import lzma

    path = tmp_path / "junk.ncu-rep.xz"
    path.write_bytes(lzma.compress(b"not a report" * 100))
    line = one_line_error(invoke("show", path), str(path))
    assert "profkit-" not in line.replace(str(tmp_path), "")


def test_markdown_escapes_html_in_names(tmp_path: Path) -> None:
    from profkit.textsafe import md_escape

    assert md_escape("<script>a|b</script> & ->") == r"&lt;script>a\|b&lt;/script> &amp; ->"
    a, b = store.load(PROFILES / OLDER), store.load(PROFILES / NEWEST)
    for run in (a, b):
        run.cases = run.cases.head(2).assign(kernel="<img src=x onerror=alert(1)>")
    md = compare.to_markdown(compare.compare_runs(a, b))
    assert "<img" not in md and "&lt;img src=x onerror=alert(1)>" in md


def test_list_reads_integer_arithmetic_in_a_sweep_without_running_it(tmp_path: Path) -> None:
    (tmp_path / "k.py").write_text(
        # a spec capture would take (list validates as capture does: issue 31), never run here
        "import torch\nfrom profkit.spec import KernelSpec, Variant\n"
        "def f(*args):\n    return torch.ones(1)\n"
        "SPEC = KernelSpec(name='k', description='', variants=(Variant('a', f),),\n"
        "    make_inputs=f, reference=f, dtypes=('float32',), tolerances={'float32': (0, 0)},\n"
        "    shapes=((1 << 16,), (4 * 1024, 2**10)), bytes_moved=f, flops=f)\n"
    )
    done = _without_torch("list", "--from", str(tmp_path / "k.py"))
    assert done.returncode == 0, done.stderr
    assert "65536" in done.stdout and "4096x1024" in done.stdout
