"""The command line through click's CliRunner: every command on the committed H200 runs and the
report fixtures, `capture --interpret` on the CPU, and one-line errors for every bad input."""

from __future__ import annotations

import io
import json
import lzma
import os
import random
import re
import shutil
from collections.abc import Callable
from pathlib import Path

# Before anything imports triton in this process: `capture --interpret` sets it too, but in one
# process triton's own @jit helpers (tl.sum's combine function) keep the mode of its first import,
# and `list` (run first here) imports the lab's kernels. Same as test_rmsnorm_interpret.py.
os.environ["TRITON_INTERPRET"] = "1"

import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from click.testing import CliRunner, Result  # noqa: E402
from conftest import one_line_error
from stored_runs import v1_v2_profiles

from profkit import store  # noqa: E402
from profkit.cli import cli  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PROFILES = v1_v2_profiles()  # the two schema-1 RMSNorm runs alone
FIXTURES = ROOT / "tests" / "fixtures"
NEWEST = "rmsnorm-20261130-014917-vm-4bc5"
OLDER = "rmsnorm-20261130-014110-vm-83a4"
CASES = 96  # 4 variants x 3 dtypes x 8 shapes in each committed run
CASE_KEYS = ["variant", "dtype", "shape"]
SHOW_CSV_COLUMNS = {
    "kernel",
    "variant",
    "dtype",
    "shape",
    "correct",
    "device_p50_ms",
    "device_p95_ms",
    "gbps",
    "tflops",
    "pct_peak_bw",
    "dram_throughput_pct",
    "achieved_occupancy_pct",
    "tensor_pipe_pct",
    "sm_throughput_pct",
    "l2_hit_pct",
    "dram_bytes",
    "kernel_count",
    "ncu_duration_ms",
}
# fx_rmsnorm: the fused kernel, then the unfused eager chain's 8 launches
FX_RMSNORM_KERNELS = [
    "_rmsnorm_kernel",
    "unrolled_elementwise_kernel",
    "vectorized_elementwise_kernel",
    "reduce_kernel",
    "vectorized_elementwise_kernel",
    "vectorized_elementwise_kernel",
    "elementwise_kernel",
    "vectorized_elementwise_kernel",
    "elementwise_kernel",
]


def invoke(*args: object, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args], env=env)


def ok(result: Result) -> Result:
    assert result.exit_code == 0, (result.output, result.exception)
    return result


def table_rows(text: str) -> list[list[str]]:
    """The first-line cells of each row of a rich table (continuation lines of wrapped cells,
    whose first cell is blank, are skipped)."""
    rows = []
    for line in text.splitlines():
        if line[:1] in ("│", "┃"):  # a data row, or the header
            rows.append([cell.strip() for cell in re.split("[│┃]", line.strip("│┃ "))])
    return [r for r in rows if r[0]]


def case_keys(df: pd.DataFrame) -> list[tuple[str, str, str]]:
    return list(df[CASE_KEYS].astype(str).itertuples(index=False, name=None))


@pytest.fixture
def no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


def newest_cases() -> pd.DataFrame:
    return store.load(PROFILES / NEWEST).cases


# --- list ----------------------------------------------------------------------------------------


def list_blocks(text: str) -> dict[str, dict[str, str]]:
    """`profkit list`: kernel name -> {label: value}, wrapped values joined."""
    blocks: dict[str, dict[str, str]] = {}
    label = ""
    for line in text.splitlines():
        if line and not line.startswith(" "):
            kernel = blocks.setdefault(line.strip(), {})
        elif line[:3].strip():  # "  variants  ..."
            label, _, value = line.strip().partition("  ")
            kernel[label] = value.strip()
        elif line.strip():  # a wrapped value goes on under its label
            kernel[label] += " " + line.strip()
    return blocks


def test_list_shows_variants_dtypes_and_shapes() -> None:
    out = ok(invoke("list")).stdout
    rmsnorm = list_blocks(out)["rmsnorm"]
    # only baselines starred
    variants = "triton, eager*, native*, compile*, liger*, triton_v2, triton_v3  (* = baseline)"
    assert rmsnorm["variants"] == variants
    assert rmsnorm["dtypes"] == "float16, bfloat16, float32"
    shapes = re.findall(r"\b\d+x\d+\b", rmsnorm["shapes"])
    assert shapes == ["1x4096", "16x8192", "32x16384", "4096x1024", "4096x4096", "4096x8192",
                      "2048x16384", "16384x8192"]  # fmt: skip
    assert re.findall(r"\b\d+x\d+\b", list_blocks(out)["decode"]["shapes"]) == [
        "1x512", "1x8192", "64x2048"]  # fmt: skip


# --- show ----------------------------------------------------------------------------------------


def test_show_picks_the_newest_run_csv() -> None:
    out = ok(invoke("show", "--profiles", PROFILES, "--format", "csv")).stdout
    df = pd.read_csv(io.StringIO(out))
    assert SHOW_CSV_COLUMNS <= set(df.columns)
    assert len(df) == CASES
    assert df.correct.astype(bool).all()
    # the newest run (014917), not the older one: the whole table is its cases.csv
    pd.testing.assert_frame_equal(df, newest_cases())
    first = df.iloc[0]
    assert (first["variant"], first["dtype"], first["shape"]) == ("triton", "float16", "1x4096")
    assert first.device_p50_ms == pytest.approx(0.004416, abs=1e-6)
    assert first.kernel_count == 1
    assert store.load(PROFILES / OLDER).cases.device_p50_ms.iloc[0] != pytest.approx(
        first.device_p50_ms
    )


def test_show_json_has_the_same_rows() -> None:
    records = json.loads(ok(invoke("show", "--profiles", PROFILES, "--format", "json")).stdout)
    assert isinstance(records, list) and len(records) == CASES
    expected = newest_cases()
    assert list(records[0]) == list(expected.columns)
    assert [(r["variant"], r["dtype"], r["shape"]) for r in records] == case_keys(expected)
    assert [r["device_p50_ms"] for r in records] == pytest.approx(expected.device_p50_ms.tolist())
    assert [r["kernel_count"] for r in records] == expected.kernel_count.tolist()
    # NaN is null in JSON (the timing-free error column of correct cases)
    assert all(r["error"] is None for r in records)


def test_show_table_prints_run_ceilings_and_counters() -> None:
    out = ok(invoke("show", "--profiles", PROFILES, env={"COLUMNS": "240"})).stdout
    lines = out.splitlines()
    assert lines[0] == f"run {NEWEST}: rmsnorm on NVIDIA H200 (2026-11-30T01:53:21+00:00)"
    assert lines[1] == "ceilings: copy 4248 GB/s, bf16 matmul 694 TFLOP/s"
    assert lines[2] == "counters: ok"
    rows = table_rows(out)
    assert rows[0][:5] == ["kernel", "variant", "dtype", "shape", "correct"]
    assert len(rows) == 1 + CASES
    assert rows[1][:5] == ["rmsnorm", "triton", "float16", "1x4096", "True"]


@pytest.mark.parametrize("by", ["id", "path"])
def test_show_a_named_run(by: str) -> None:
    ref = OLDER if by == "id" else PROFILES / OLDER
    out = ok(invoke("show", ref, "--profiles", PROFILES)).stdout
    assert out.splitlines()[0].startswith(f"run {OLDER}: rmsnorm on NVIDIA H200")
    csv = ok(invoke("show", ref, "--profiles", PROFILES, "--format", "csv")).stdout
    pd.testing.assert_frame_equal(pd.read_csv(io.StringIO(csv)), store.load(PROFILES / OLDER).cases)


def test_show_a_run_by_path_without_profiles_dir(tmp_path: Path) -> None:
    # a path needs no --profiles (and the default profiles/ is not consulted)
    out = ok(invoke("show", PROFILES / NEWEST, "--profiles", tmp_path / "none")).stdout
    assert out.startswith(f"run {NEWEST}:")


def test_show_report_prints_one_row_per_launch(ncu_rep_path: Callable[[str], Path]) -> None:
    csv = ok(invoke("show", FIXTURES / "fx_rmsnorm.ncu-rep.xz", "--format", "csv")).stdout
    df = pd.read_csv(io.StringIO(csv))
    assert df.launch.tolist() == list(range(9))
    assert df.kernel_name.tolist() == FX_RMSNORM_KERNELS
    assert df.case.tolist() == (
        ["rmsnorm.triton.float16.4096x8192"] + ["rmsnorm.eager.float16.4096x4096"] * 8
    )
    assert (df.kernel_count == 1).all()
    # the plain .ncu-rep, as a table
    out = ok(invoke("show", ncu_rep_path("fx_rmsnorm"), env={"COLUMNS": "240"})).stdout
    rows = table_rows(out)
    assert rows[0][:2] == ["launch", "nvtx_range"]
    assert [r[0] for r in rows[1:]] == [str(i) for i in range(9)]
    records = json.loads(ok(invoke("show", ncu_rep_path("fx_rmsnorm"), "--format", "json")).stdout)
    assert [r["kernel_name"] for r in records] == FX_RMSNORM_KERNELS


# --- explain -------------------------------------------------------------------------------------


def explain_json(*args: object) -> list[dict]:
    doc = json.loads(ok(invoke("explain", *args, "--format", "json")).stdout)
    assert doc["schema_version"] == 2 and isinstance(doc["findings"], list)
    return doc["findings"]


def test_explain_newest_run_json() -> None:
    findings = explain_json("--profiles", PROFILES)
    for f in findings:
        assert {"subject", "bottleneck", "verdict", "evidence", "next", "text"} <= set(f)
        assert f["text"] and f["evidence"] and isinstance(f["evidence"], dict)
        assert isinstance(f["next"], list)
        # evidence keyed by stable identifiers, never by English
        assert all(re.fullmatch(r"[a-z0-9_]+", key) for key in f["evidence"]), f["evidence"]
    kinds = [f["kind"] for f in findings]
    assert kinds.count("verdict") == 1 and kinds.count("case") == CASES
    verdict = next(f for f in findings if f["kind"] == "verdict")
    assert verdict["subject"] == "rmsnorm"
    assert verdict["verdict"] in ("win", "active track", "not a win")
    cases = [f for f in findings if f["kind"] == "case"]
    assert [f["subject"] for f in cases] == [
        f"rmsnorm {v} {d} {s}" for v, d, s in case_keys(newest_cases())
    ]
    assert {f["bottleneck"] for f in cases} <= {"memory", "compute", "latency", "balanced", None}
    # the newest run, not the older one
    assert findings == explain_json(NEWEST, "--profiles", PROFILES)
    assert findings != explain_json(OLDER, "--profiles", PROFILES)


def test_explain_markdown_and_terminal() -> None:
    findings = explain_json("--profiles", PROFILES)
    verdict = next(f for f in findings if f["kind"] == "verdict")["verdict"]
    first = next(f for f in findings if f["subject"] == "rmsnorm triton float16 1x4096")
    md = ok(invoke("explain", "--profiles", PROFILES, "--format", "markdown")).stdout
    assert md.startswith("### rmsnorm\n")
    assert f"**rmsnorm: {verdict}.**" in md
    assert md.count("\n- **rmsnorm ") == CASES
    term = ok(invoke("explain", "--profiles", PROFILES)).stdout
    assert f"rmsnorm triton  {verdict.upper()}" in term
    detail = ok(invoke("explain", "--profiles", PROFILES, "--case", "triton float16 1x4096")).stdout
    label = f"{first['bottleneck']}-bound" if first["bottleneck"] else "no bottleneck claim"
    assert f"rmsnorm triton float16 1x4096  {label}" in detail


def test_explain_report(ncu_rep_path: Callable[[str], Path]) -> None:
    findings = explain_json(FIXTURES / "fx_rmsnorm.ncu-rep.xz")
    assert [f["kind"] for f in findings] == ["launch"] * 9
    assert [f["subject"] for f in findings] == FX_RMSNORM_KERNELS
    assert all(f["verdict"] is None for f in findings)  # no baselines in a bare report
    assert all(f["text"] for f in findings)
    # the plain .ncu-rep gives the same findings; the terminal view names each bottleneck
    assert explain_json(ncu_rep_path("fx_rmsnorm")) == findings
    term = ok(invoke("explain", ncu_rep_path("fx_rmsnorm"))).stdout
    for f in findings:
        label = f"{f['bottleneck']}-bound" if f["bottleneck"] else "no bottleneck claim"
        assert f"{f['subject']}  {label}" in term


# --- compare -------------------------------------------------------------------------------------


def test_compare_csv_and_json() -> None:
    older, newer = store.load(PROFILES / OLDER).cases, newest_cases()
    out = ok(invoke("compare", OLDER, NEWEST, "--profiles", PROFILES, "--format", "csv")).stdout
    df = pd.read_csv(io.StringIO(out))
    assert len(df) == CASES
    assert case_keys(df) == case_keys(older) == case_keys(newer)
    assert df.device_p50_ms_a.tolist() == pytest.approx(older.device_p50_ms.tolist())
    assert df.device_p50_ms_b.tolist() == pytest.approx(newer.device_p50_ms.tolist())
    assert df.delta_ms.tolist() == pytest.approx(
        (newer.device_p50_ms - older.device_p50_ms).tolist()
    )
    assert set(df.flag) <= {"faster", "slower", "noise"}
    assert df.flag.iloc[:2].tolist() == ["noise", "slower"]  # triton / eager, float16 1x4096
    records = json.loads(
        ok(invoke("compare", OLDER, NEWEST, "--profiles", PROFILES, "--format", "json")).stdout
    )
    assert len(records) == CASES
    assert list(records[0]) == list(df.columns)
    assert [r["flag"] for r in records] == df.flag.tolist()


def test_compare_markdown_and_terminal() -> None:
    md = ok(invoke("compare", OLDER, NEWEST, "--profiles", PROFILES, "--format", "markdown")).stdout
    assert md.splitlines()[0].startswith(f"**A: {OLDER}  vs  B: {NEWEST}** (times in ms;")
    assert sum(line.startswith("| rmsnorm ") for line in md.splitlines()) == CASES
    # paths work as well as ids
    term = ok(invoke("compare", PROFILES / OLDER, PROFILES / NEWEST)).stdout
    assert f"A: {OLDER} vs B: {NEWEST}" in " ".join(term.split())  # the title may wrap
    assert "different GPUs" not in term


# --- bad input: one line, non-zero exit, never a traceback ---------------------------------------


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (
            ["nope"],
            [
                "unknown kernel 'nope'",
                "known: add_rmsnorm, decode, matmul, matmul_fp8, rmsnorm, softmax, sum, swiglu, "
                "vector_add",
            ],
        ),
        (["rmsnorm", "--shape", "4096by8192"], ["malformed shape '4096by8192'", "MxN"]),
        (["rmsnorm", "--shape", "0x5"], ["malformed shape '0x5'", "positive"]),
        (["rmsnorm", "--shape", "4096x"], ["malformed shape '4096x'"]),
        (["rmsnorm", "--dtype", "int8"], ["dtype 'int8'", "supported: float16, bfloat16, float32"]),
        (
            ["rmsnorm", "--variant", "cuda"],
            ["no variant 'cuda'", "known: triton, eager, native, compile"],
        ),
        # well-formed, but rmsnorm's bytes model needs two dimensions
        (["rmsnorm", "--shape", "64"], ["rmsnorm does not take shape '64'", "IndexError"]),
    ],
)
def test_capture_bad_input(tmp_path: Path, args: list[str], words: list[str]) -> None:
    out = tmp_path / "runs"
    one_line_error(invoke("capture", *args, "--interpret", "--out", out), *words)
    assert not out.exists()


def test_capture_out_under_a_file(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    result = invoke(
        "capture",
        "rmsnorm",
        "--interpret",
        "--variant",
        "eager",
        "--out",
        tmp_path / "afile" / "runs",
    )
    one_line_error(result, "cannot store a run under", "Not a directory")


def test_capture_without_gpu_stores_nothing(tmp_path: Path, no_gpu: None) -> None:
    out = tmp_path / "runs"
    line = one_line_error(invoke("capture", "rmsnorm", "--out", out), "no CUDA GPU", "--interpret")
    assert line.startswith("error: no CUDA GPU here")
    assert not out.exists()
    # an existing --out folder stays as it was: no run and no temp directory in it
    out.mkdir()
    one_line_error(invoke("capture", "rmsnorm", "--out", out), "no CUDA GPU")
    assert list(out.iterdir()) == []


@pytest.mark.parametrize("command", ["show", "explain"])
def test_missing_run(command: str) -> None:
    one_line_error(
        invoke(command, "no-such-run", "--profiles", PROFILES),
        "no run named 'no-such-run'",
        str(PROFILES),
    )


@pytest.mark.parametrize("command", ["show", "explain"])
def test_directory_that_is_not_a_run(tmp_path: Path, command: str) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "cases.csv").write_text("a,b\n1,2\n")
    one_line_error(invoke(command, plain), f"{plain} is not a profkit run")
    # a manifest without "complete": true (a capture that never finished) is not a run either
    shutil.copytree(PROFILES / NEWEST, tmp_path / "half")
    manifest = json.loads((tmp_path / "half" / "manifest.json").read_text())
    (tmp_path / "half" / "manifest.json").write_text(json.dumps({**manifest, "complete": False}))
    one_line_error(invoke(command, tmp_path / "half"), "is not a profkit run")
    # nor is it picked as the newest run
    one_line_error(invoke(command, "--profiles", tmp_path), "no runs stored under")


@pytest.mark.parametrize("command", ["show", "explain"])
def test_empty_profiles_dir(tmp_path: Path, command: str) -> None:
    one_line_error(
        invoke(command, "--profiles", tmp_path), "no runs stored under", "profkit capture"
    )
    one_line_error(invoke(command, "--profiles", tmp_path / "absent"), "no runs stored under")


def test_compare_missing_run() -> None:
    one_line_error(invoke("compare", OLDER, "nope", "--profiles", PROFILES), "no run named 'nope'")


def _bad_report(kind: str, tmp: Path, rep: Callable[[str], Path]) -> Path:
    def cut(src: Path, name: str, fraction: float) -> Path:
        data = src.read_bytes()
        (tmp / name).write_bytes(data[: int(len(data) * fraction)])
        return tmp / name

    if kind == "empty":
        (tmp / "empty.ncu-rep").write_bytes(b"")
        return tmp / "empty.ncu-rep"
    if kind == "garbage":
        (tmp / "garbage.ncu-rep").write_bytes(random.Random(0).randbytes(4096))
        return tmp / "garbage.ncu-rep"
    if kind == "truncated_header":
        return cut(rep("fx_plain"), "t1.ncu-rep", 0.5)
    if kind == "truncated_result":
        return cut(rep("fx_matmul"), "t2.ncu-rep", 0.5)
    if kind == "truncated_xz":
        return cut(FIXTURES / "fx_rmsnorm.ncu-rep.xz", "t3.ncu-rep.xz", 0.25)
    if kind == "text_file":
        (tmp / "notes.txt").write_text("hello\n")
        return tmp / "notes.txt"
    assert kind == "missing"
    return tmp / "missing.ncu-rep"


BAD_REPORTS = {
    "empty": "holds no kernel results",
    "garbage": "holds no kernel results",
    # cut inside the header: the library loads it as an empty report
    "truncated_header": "holds no kernel results",
    # cut inside a kernel result: it loads as a result without metrics
    "truncated_result": "is truncated or damaged",
    "truncated_xz": "is not a readable .xz file",
    "text_file": "not a readable Nsight Compute report",
    "missing": "no such report",
}


@pytest.mark.parametrize("command", ["show", "explain"])
@pytest.mark.parametrize("kind", list(BAD_REPORTS))
def test_unreadable_report(
    tmp_path: Path, ncu_rep_path: Callable[[str], Path], command: str, kind: str
) -> None:
    path = _bad_report(kind, tmp_path, ncu_rep_path)
    one_line_error(invoke(command, path), str(path), BAD_REPORTS[kind])


def test_bad_report_file_is_a_valid_xz_of_garbage(tmp_path: Path) -> None:
    path = tmp_path / "junk.ncu-rep.xz"
    path.write_bytes(lzma.compress(b"not a report" * 100))
    one_line_error(invoke("show", path), "not a readable Nsight Compute report")


def test_from_a_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "missing.py"
    one_line_error(
        invoke("capture", "rmsnorm", "--from", missing, "--interpret", "--out", tmp_path / "runs"),
        "no such kernel file",
        str(missing),
    )
    assert not (tmp_path / "runs").exists()
    one_line_error(invoke("list", "--from", missing), "no such kernel file", str(missing))


def test_from_a_file_without_a_spec(tmp_path: Path) -> None:
    empty = tmp_path / "nothing.py"
    empty.write_text("X = 1\n")
    one_line_error(
        invoke("capture", "rmsnorm", "--from", empty, "--interpret", "--out", tmp_path / "runs"),
        "unknown kernel 'rmsnorm'",
        "known: none",
    )
    assert not (tmp_path / "runs").exists()
    one_line_error(invoke("list", "--from", empty), "defines no KernelSpec")


def test_from_a_file_that_fails_to_import(tmp_path: Path) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("def f(:\n")
    one_line_error(invoke("list", "--from", broken), "could not import", "SyntaxError")


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["show", "--format", "xml"], ["Invalid value for '--format'"]),
        (["capture"], ["Missing argument 'KERNEL...'"]),
        (["explain", "--format", "html"], ["Invalid value for '--format'"]),
        (["compare", OLDER], ["Missing argument 'RUN_B'"]),
    ],
)
def test_usage_errors_are_one_line(args: list[str], words: list[str]) -> None:
    result = invoke(*args)
    one_line_error(result, *words)
    assert result.exit_code == 2


def test_run_with_damaged_kernels_csv(tmp_path: Path) -> None:
    run = shutil.copytree(PROFILES / NEWEST, tmp_path / NEWEST)
    (run / "kernels.csv").write_bytes(random.Random(1).randbytes(300))
    one_line_error(invoke("show", run), "is damaged", "kernels.csv")


# --- capture --interpret -------------------------------------------------------------------------


def stored_runs(root: Path) -> list[Path]:
    return [p for p in root.iterdir() if not p.name.startswith(".")]


def test_capture_interpret(tmp_path: Path, no_gpu: None) -> None:
    out = tmp_path / "runs"
    result = ok(
        invoke(
            "capture",
            "rmsnorm",
            "--interpret",
            "--out",
            out,
            "--variant",
            "triton",
            "--variant",
            "eager",
            "--dtype",
            "fp16",
            "--dtype",
            "bf16",
        )
    )
    [path] = stored_runs(out)
    assert not [p for p in out.iterdir() if p.name.startswith(store.TMP_PREFIX)]
    # no "incorrect" note; said to be a correctness run that is read only when named
    assert result.stdout.rstrip().splitlines()[-1] == (
        f"stored {path} (interpret run: correctness only, untimed; read it by name)"
    )
    run = store.load(path)
    m = run.manifest
    assert m["complete"] is True and m["run_id"] == path.name
    assert m["kernel"] == "rmsnorm" and m["mode"] == "interpret"
    assert m["counters"]["status"] == "skipped"
    assert m["ceilings"] == {}
    assert m["env"] == {"TRITON_INTERPRET": "1"}
    assert m["options"]["variants"] == ["triton", "eager"]
    assert m["options"]["dtypes"] == ["float16", "bfloat16"]
    assert m["options"]["shapes"] == ["4x64", "3x100", "2x1024"]  # the spec's interpret_shapes
    cases = run.cases
    assert len(cases) == 2 * 2 * 3
    assert cases.correct.astype(bool).all(), cases[["case", "error"]]
    assert (cases.rel_err < 1e-2).all()
    assert set(zip(cases.variant, cases.dtype, strict=True)) == {
        (v, d) for v in ("triton", "eager") for d in ("float16", "bfloat16")
    }
    assert cases.case.iloc[0] == "rmsnorm.triton.float16.4x64"
    assert cases.dram_bytes.isna().all()  # no counters in interpret mode
    assert run.kernels is None and not (path / "kernels.csv").exists()
    # show reads it back by name: a correctness run, counters skipped with the reason
    shown = ok(invoke("show", path.name, "--profiles", out, env={"COLUMNS": "200"})).stdout
    shown_lines = shown.splitlines()
    assert shown_lines[0].startswith(
        f"run {path.name}: rmsnorm interpret run (correctness only, nothing timed)"
    )
    assert shown_lines[1] == "counters: skipped (interpret mode: correctness only)"


@pytest.mark.slow
def test_capture_interpret_every_variant_including_compile(tmp_path: Path, no_gpu: None) -> None:
    # torch.compile on the CPU: ~20 s for its first compiles
    out = tmp_path / "runs"
    ok(invoke("capture", "rmsnorm", "--interpret", "--out", out, "--dtype", "fp16"))
    [path] = stored_runs(out)
    cases = store.load(path).cases
    expected = ["triton", "eager", "native", "compile", "triton_v2", "triton_v3"]
    assert cases.variant.unique().tolist() == expected
    assert len(cases) == len(expected) * 3
    assert cases.correct.astype(bool).all(), cases[["case", "error"]]
    assert (cases[cases.variant == "compile"].rel_err < 1e-2).all()


USER_SPEC = """
import torch
import triton
import triton.language as tl

from profkit.spec import KernelSpec, Variant


@triton.jit
def _scale2_kernel(X, Y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(Y + offs, tl.load(X + offs, mask=mask) * 2, mask=mask)


def scale2_triton(inputs):
    x, out = inputs["x"], inputs["out"]
    _scale2_kernel[(triton.cdiv(x.numel(), 128),)](x, out, x.numel(), BLOCK=128)
    return out


def make_inputs(shape, dtype, device, generator):
    x = torch.randn(shape, generator=generator, device=device).to(getattr(torch, dtype))
    return {"x": x, "out": torch.empty_like(x)}


SCALE2 = KernelSpec(
    name="scale2", description="y = 2 x",
    variants=(Variant("triton", scale2_triton),
              Variant("torch", lambda i: i["x"] * 2, baseline=True)),
    make_inputs=make_inputs, reference=lambda i: i["x"].double() * 2,
    dtypes=("float32", "float16"), shapes=((1024, 1024),),
    tolerances={"float32": (1e-6, 1e-6), "float16": (1e-3, 1e-3)},
    bytes_moved=lambda s, e: 2 * s[0] * s[1] * e, flops=lambda s: s[0] * s[1],
    interpret_shapes=((8, 8), (3, 100)),
)
"""


def test_capture_interpret_user_spec(tmp_path: Path, no_gpu: None) -> None:
    spec_file = tmp_path / "my_kernels.py"
    spec_file.write_text(USER_SPEC)
    out = tmp_path / "runs"
    ok(invoke("capture", "scale2", "--from", spec_file, "--interpret", "--out", out))
    [path] = stored_runs(out)
    assert path.name.startswith("scale2-")
    run = store.load(path)
    assert run.manifest["kernel"] == "scale2"
    assert run.manifest["kind"] == run.kind == store.CAPTURE  # every new run states its kind
    assert run.manifest["source"] == str(spec_file)
    assert run.cases.kernel.unique().tolist() == ["scale2"]
    assert sorted(run.cases.case) == sorted(
        f"scale2.{v}.{d}.{s}"
        for v in ("triton", "torch")
        for d in ("float32", "float16")
        for s in ("8x8", "3x100")
    )
    assert run.cases.correct.astype(bool).all(), run.cases[["case", "error"]]
    assert run.cases[run.cases.variant == "torch"].baseline.astype(bool).all()
    listed = list_blocks(ok(invoke("list", "--from", spec_file)).stdout)
    assert listed == {
        "scale2": {
            "variants": "triton, torch*  (* = baseline)",
            "dtypes": "float32, float16",
            "shapes": "1024x1024",
        }
    }


# --- an interrupted capture leaves no run --------------------------------------------------------


def _snapshot(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def test_interrupted_capture_leaves_no_run(
    tmp_path: Path, no_gpu: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    import profkit.capture

    out = tmp_path / "runs"
    shutil.copytree(PROFILES / OLDER, out / OLDER)  # a run stored earlier
    before = _snapshot(out)
    seen: list[list[str]] = []

    def interrupted(*args, **kwargs):
        seen.append(sorted(p.name for p in out.iterdir()))  # the temp dir exists by now
        raise KeyboardInterrupt

    monkeypatch.setattr(profkit.capture, "measure_cases", interrupted)
    result = invoke("capture", "rmsnorm", "--interpret", "--variant", "eager", "--out", out)
    assert result.exit_code == 130
    assert isinstance(result.exception, SystemExit)
    assert [line for line in result.stderr.splitlines() if line.strip()] == ["aborted"]
    assert len(seen) == 1 and any(n.startswith(store.TMP_PREFIX) for n in seen[0])
    assert sorted(p.name for p in out.iterdir()) == [OLDER]  # no new run, no .tmp-* left
    assert _snapshot(out) == before
    assert store.list_runs(out) == [out / OLDER]


def test_dashboard_command_writes_the_page(tmp_path: Path) -> None:
    out = tmp_path / "d" / "page.html"
    result = ok(invoke("dashboard", "--profiles", PROFILES, "--out", out))
    assert out.is_file() and NEWEST in out.read_text()
    assert str(out) in result.output
    one_line_error(invoke("dashboard", "ghost", "--profiles", PROFILES), "no run named 'ghost'")
