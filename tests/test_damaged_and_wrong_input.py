"""Issue 31 (faults, round 3), part B: damaged runs and wrong input a new user met, each with what
the user must see. Each fault's test failed on 46e98b8; the variations beside them guard what a
user would try next.

- a corrupt compressed member (samples.csv.gz, rules.csv.xz, 4 bytes overwritten): one line naming
  the file, never zlib's or lzma's traceback; with --force the table is left out and said
- a shape of a rank the spec does not take (`capture rmsnorm --shape 2x8x4`): refused, one line
- the reference is computed first, from pristine inputs: a variant that zeroes its input fails, a
  correct in-place one passes
- two specs with one name in a --from file: refused by capture and by list, never one dropped
- `list --from` refuses what `capture` refuses, in the same words (one validation)
- a damaged newest manifest (cut, deleted, not JSON): show, explain and dashboard say the newest
  run is damaged, never read an older one in its place
- an edit to manifest.json itself (kernel, GPU, copy ceiling, run id): the run is damaged
- `explain --variant ""`: refused, one line
- a cut rules.csv.xz names the file; dashboard says a damage once; --force csv and json carry a
  DAMAGED mark
"""

from __future__ import annotations

import io
import json
import os
import shutil
from pathlib import Path

os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported (see test_cli.py)

import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from click.testing import CliRunner, Result  # noqa: E402
from conftest import one_line_error  # noqa: E402
from stored_runs import stored_run  # noqa: E402

from profkit import store  # noqa: E402
from profkit.cli import cli  # noqa: E402

# a small stored run (stored before checksums) holding every table, the compressed ones included
RUN = "suite_chain-20261130-163720-vm-54bb"


def invoke(*args: object) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture(autouse=True)
def no_profiles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs are named by path or --profiles: no stored run takes part unless a test puts it."""
    (tmp_path / "none").mkdir()
    monkeypatch.setenv("PROFKIT_PROFILES", str(tmp_path / "none"))


@pytest.fixture
def no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


def copy_run(dst: Path, run_id: str = RUN, sealed: bool = False) -> Path:
    """A copy of the stored run; sealed: with counts and checksums, as capture now stores one."""
    path = shutil.copytree(stored_run(RUN), dst / run_id)
    if run_id != RUN:
        manifest = json.loads((path / store.MANIFEST).read_text())
        stamp = run_id.split("-")[1:3]  # kernel-YYYYmmdd-HHMMSS-...
        created = f"{stamp[0][:4]}-{stamp[0][4:6]}-{stamp[0][6:]}T{stamp[1][:2]}:{stamp[1][2:4]}"
        manifest.update(run_id=run_id, created=f"{created}:{stamp[1][4:]}+00:00")
        (path / store.MANIFEST).write_text(json.dumps(manifest))
    if sealed:
        store.seal(path)
    return path


def edited(f: Path) -> None:
    """A value changed in a table (a case's correct flag), the file still well-formed."""
    f.write_bytes(f.read_bytes().replace(b"True", b"Fals", 1))


def overwrite(f: Path, at: int | None = None) -> None:
    """4 bytes overwritten in place (the middle of the file unless at)."""
    data = bytearray(f.read_bytes())
    at = len(data) // 2 if at is None else at
    data[at : at + 4] = b"\xde\xad\xbe\xef"
    f.write_bytes(bytes(data))


def quiet_ok(result: Result) -> Result:
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output and result.exception is None, result.exception
    return result


# --- a corrupt compressed member (traceback cause 2) ---------------------------------------------


@pytest.mark.parametrize("at", [None, 0, 20], ids=["middle", "header", "early"])
@pytest.mark.parametrize("command", ["show", "explain"])
def test_a_corrupt_samples_gz_is_one_line_naming_it(tmp_path: Path, command: str, at) -> None:
    # stored before checksums: nothing but the file itself can find it
    run = copy_run(tmp_path)
    overwrite(run / store.SAMPLES, at)
    line = one_line_error(invoke(command, run), run.name, "damaged", "samples.csv.gz is corrupt")
    assert "--force" in line


def test_a_corrupt_samples_gz_under_force_is_left_out_and_said(tmp_path: Path) -> None:
    run = copy_run(tmp_path, sealed=True)  # a checksummed run: --force reads past the checksum
    overwrite(run / store.SAMPLES)
    result = quiet_ok(invoke("show", run, "--force"))
    assert "samples.csv.gz is corrupt" in result.stderr and "DAMAGED RUN" in result.stdout
    assert store.load(run, force=True).samples is None  # nothing of it read as valid
    quiet_ok(invoke("explain", run, "--force"))
    quiet_ok(invoke("dashboard", run, "--force", "--out", tmp_path / "d.html"))


@pytest.mark.parametrize("sealed", [False, True], ids=["before-checksums", "checksummed-force"])
@pytest.mark.parametrize("damage", ["overwritten", "cut"])
def test_a_corrupt_or_cut_rules_xz_is_a_warning_naming_it(
    tmp_path: Path, sealed: bool, damage: str
) -> None:
    # rules.csv is optional (NVIDIA's rule messages): left out with a warning naming the file, as
    # an unparseable rules.csv is; a checksummed run refuses it unless --force
    run = copy_run(tmp_path, sealed=sealed)
    packed = run / f"{store.RULES}.xz"
    if damage == "cut":
        packed.write_bytes(packed.read_bytes()[: packed.stat().st_size // 2])
    else:
        overwrite(packed)
    if sealed:
        one_line_error(invoke("explain", run), "damaged", "rules.csv.xz")
    force = ("--force",) if sealed else ()
    for command in ("show", "explain"):
        result = quiet_ok(invoke(command, run, *force))
        said = [line for line in result.stderr.splitlines() if "rules.csv.xz is unreadable" in line]
        assert len(said) == 1 and str(packed) in said[0], result.stderr
        assert "input ended early" not in result.stderr
    assert store.load(run, force=sealed).rules is None


# --- a shape of the wrong rank --------------------------------------------------------------------


def test_a_shape_of_the_wrong_rank_is_refused(tmp_path: Path, no_gpu: None) -> None:
    # the input: rmsnorm takes MxN; 2x8x4 was stored as correct with the bytes of 2x8
    out = tmp_path / "runs"
    args = ["--interpret", "--variant", "eager", "--dtype", "fp32", "--out", out]
    line = one_line_error(invoke("capture", "rmsnorm", "--shape", "2x8x4", *args), "2x8x4", "2-D")
    assert "3-D" in line and not out.exists()
    # a shape of the right rank beside it does not let it through
    one_line_error(invoke("capture", "rmsnorm", "--shape", "4x64", "--shape", "2x8x4", *args))
    assert not out.exists()


@pytest.mark.parametrize(
    "kernel, shape, ok",
    [
        ("matmul", (64, 64), False),  # MxNxK
        ("matmul", (64, 64, 64, 2), False),
        ("rmsnorm", (2, 8, 4, 1), False),
        ("sum", (3, 4, 5), False),
        ("sum", (4096,), True),  # sum takes N and MxN: both are in its sweeps
        ("sum", (8, 4096), True),
        ("rmsnorm", (8, 4096), True),
    ],
)
def test_a_shape_is_checked_by_the_spec_s_own_rank(kernel: str, shape: tuple, ok: bool) -> None:
    from profkit.capture import CaptureOptions, check_shapes
    from profkit.errors import ProfkitError
    from profkit.spec import find_spec, format_shape

    spec = find_spec(kernel)
    opts = CaptureOptions(spec.dtypes[:1], (shape,), (spec.variants[0].name,), Path("."), True)
    if ok:
        check_shapes(spec, opts)
    else:  # by the spec's own model where it refuses the shape, else by the rank of its sweeps
        with pytest.raises(ProfkitError, match=f"does not take shape '{format_shape(shape)}'"):
            check_shapes(spec, opts)


# --- the reference first, from pristine inputs ---------------------------------------------------

# a CPU-only spec (torch, no Triton: fast); {variants} and {reference} are replaced per test
CPU_SPEC = """
import torch
from profkit.spec import KernelSpec, Variant

def make_inputs(shape, dtype, device, generator):
    return {{"x": torch.randn(shape, generator=generator, device=device).to(getattr(torch, dtype))}}

def zeroes_its_input(i):
    return i["x"].zero_()

def in_place(i):
    return i["x"].mul_(2)

def right_then_spoils_its_input(i):
    y = i["x"] * 2
    i["x"].zero_()
    return y

def copy(i):
    return i["x"] * 2

TINY = KernelSpec(
    name="tiny", description="y = 2 x", variants=({variants}),
    make_inputs=make_inputs, reference={reference},
    dtypes=("float32",), shapes=((8, 8),), tolerances={{"float32": (1e-6, 1e-6)}},
    bytes_moved=lambda s, e: 2 * s[0] * s[1] * e, flops=lambda s: s[0] * s[1],
    interpret_shapes=((8, 8), (3, 5)),
)
"""


def capture_cpu(tmp_path: Path, variants: str, reference: str = "") -> pd.Series:
    """variant -> correct at every case, from `capture --interpret` of CPU_SPEC."""
    spec = tmp_path / "tiny.py"
    reference = reference or "lambda i: i['x'].double() * 2"
    spec.write_text(CPU_SPEC.format(variants=variants, reference=reference))
    out = tmp_path / "runs"
    result = invoke("capture", "tiny", "--from", spec, "--interpret", "--out", out)
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    [run] = out.iterdir()
    cases = store.load(run).cases
    return cases.groupby("variant")["correct"].apply(lambda c: bool(c.astype(bool).all()))


def test_a_variant_is_checked_against_the_reference_of_pristine_inputs(
    tmp_path: Path, no_gpu: None
) -> None:
    correct = capture_cpu(
        tmp_path,
        "Variant('zero', zeroes_its_input), Variant('inplace', in_place), "
        "Variant('spoils', right_then_spoils_its_input), Variant('copy', copy, baseline=True)",
    )
    # zeroing the input and returning it matched a reference computed after it, from zeros
    assert not correct["zero"]
    # in place is legal: x.mul_(2) is 2x
    assert correct["inplace"] and correct["spoils"] and correct["copy"]


def test_a_reference_that_works_in_place_spoils_no_variant_s_inputs(
    tmp_path: Path, no_gpu: None
) -> None:
    correct = capture_cpu(
        tmp_path,
        "Variant('copy', copy), Variant('inplace', in_place)",
        "lambda i: i['x'].mul_(2).double()",
    )
    assert correct["copy"] and correct["inplace"]


# --- two specs with one name, and list --from validated as capture validates ----------------------

# a spec file list reads without running it (every field a literal or a name); FIELDS fill it,
# {more} adds module-level lines
LITERAL_SPEC = """
import torch
from profkit.spec import KernelSpec, Variant

def make_inputs(shape, dtype, device, generator):
    return {{"x": torch.randn(shape, generator=generator, device=device).to(getattr(torch, dtype))}}

def double(i):
    return i["x"] * 2

def ref(i):
    return i["x"].double() * 2

TINY = KernelSpec(
    name={name!r}, description="y = 2 x",
    variants={variants},
    make_inputs=make_inputs, reference=ref,
    dtypes={dtypes}, shapes=((8, 8),), tolerances={tolerances},
    bytes_moved=lambda s, e: 2 * s[0] * s[1] * e, flops=lambda s: s[0] * s[1],
)
{more}
"""
FIELDS = {
    "name": "tiny",
    "variants": "(Variant('mine', double), Variant('torch', double, baseline=True))",
    "dtypes": "('float32',)",
    "tolerances": "{'float32': (1e-6, 1e-6)}",
    "more": "",
}
# a KernelSpec call that is not a module-level entry: list must import the file to read it
IMPORTED = "def rebuilt():\n    return KernelSpec(**TINY.__dict__)"


def spec_file(tmp_path: Path, **fields: str) -> Path:
    path = tmp_path / "mine.py"
    path.write_text(LITERAL_SPEC.format(**{**FIELDS, **fields}))
    return path


def both_refuse(tmp_path: Path, path: Path, *words: str, kernel: str = "tiny") -> None:
    """capture and list refuse the file with the same one line, and nothing is stored."""
    out = tmp_path / "runs"
    caught = invoke("capture", kernel, "--from", path, "--interpret", "--out", out)
    listed = invoke("list", "--from", path)
    assert one_line_error(listed, *words) == one_line_error(caught, *words)
    assert not out.exists()


TWICE = {
    # built in code: list imports the file
    "built": "TWIN = KernelSpec(**{**TINY.__dict__, 'description': 'another'})",
    # written out twice: list reads it without running it
    "literal": "TWIN = " + LITERAL_SPEC.split("TINY = ", 1)[1].split("{more}")[0],
}


@pytest.mark.parametrize("how", TWICE)
def test_two_specs_with_one_name_in_a_file_are_refused(
    tmp_path: Path, no_gpu: None, how: str
) -> None:
    twin = TWICE[how].format(**FIELDS) if how == "literal" else TWICE[how]
    both_refuse(tmp_path, spec_file(tmp_path, more=twin), "two kernel specs named 'tiny'")


def test_one_kernel_name_in_two_lab_files_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from profkit import spec
    from profkit.errors import ProfkitError

    files = []
    for folder in (tmp_path / "a", tmp_path / "b"):
        folder.mkdir()
        files.append(spec_file(folder))
    monkeypatch.setattr(spec, "lab_files", lambda: files)
    with pytest.raises(ProfkitError, match=r"kernel 'tiny' is defined in .*b/mine.py and in"):
        spec.list_specs()


def test_one_spec_under_two_names_is_one_spec(tmp_path: Path, no_gpu: None) -> None:
    path = spec_file(tmp_path, more="ALIAS = TINY")
    listed = quiet_ok(invoke("list", "--from", path)).stdout
    assert listed.splitlines()[0] == "tiny" and listed.count("variants") == 1


@pytest.mark.parametrize(
    "fields, words",
    [
        ({"variants": "()"}, ["variants", "at least one variant"]),
        (
            {"variants": "(Variant('mine', double), Variant('mine', double, baseline=True))"},
            ["variants", "'mine'", "more than once"],
        ),
        ({"tolerances": "{}"}, ["tolerances", "no tolerance for dtype 'float32'"]),
        (
            {"dtypes": "('float32', 'float16')"},
            ["tolerances", "no tolerance for dtype 'float16'"],
        ),
        ({"dtypes": "('float128',)"}, ["dtypes", "unknown dtype 'float128'"]),
        ({"name": "my/kernel"}, ["kernel name 'my/kernel'", "letters, digits"]),
        ({"name": "my kernel"}, ["kernel name 'my kernel'"]),
        ({"variants": "(Variant('a/b', double),)"}, ["variant name 'a/b'"]),
        ({"variants": "(Variant('mine', None),)"}, ["variant 'mine'", "fn", "callable"]),
        ({"tolerances": "{'float32': 1e-6}"}, ["tolerances", "(atol, rtol)"]),
    ],
)
@pytest.mark.parametrize("read", ["from-source", "imported"])
def test_list_from_refuses_what_capture_refuses(
    tmp_path: Path, no_gpu: None, fields: dict, words: list[str], read: str
) -> None:
    path = spec_file(tmp_path, **fields, more=IMPORTED if read == "imported" else "")
    both_refuse(tmp_path, path, *words, kernel=fields.get("name", "tiny"))


def test_a_valid_file_lists_read_from_its_source_or_imported(tmp_path: Path) -> None:
    for more in ("", IMPORTED):
        listed = quiet_ok(invoke("list", "--from", spec_file(tmp_path, more=more))).stdout
        assert listed.splitlines()[0] == "tiny" and "mine, torch*" in listed


# --- a damaged newest manifest --------------------------------------------------------------------

NEWER = "suite_chain-20261201-000000-vm-aaaaaa"


def cut(path: Path) -> None:
    f = path / store.MANIFEST
    f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])


def deleted(path: Path) -> None:
    (path / store.MANIFEST).unlink()


def not_json(path: Path) -> None:
    (path / store.MANIFEST).write_text("<html>not a manifest</html>\n")


def a_list(path: Path) -> None:
    (path / store.MANIFEST).write_text("[1, 2]\n")


@pytest.mark.parametrize("damage", [cut, deleted, not_json, a_list])
@pytest.mark.parametrize(
    "command",
    [["show"], ["show", "suite_chain"], ["explain"], ["explain", "suite_chain"], ["dashboard"]],
    ids=" ".join,
)
def test_a_damaged_newest_manifest_is_said_not_skipped(
    tmp_path: Path, command: list[str], damage
) -> None:
    profiles = tmp_path / "profiles"
    copy_run(profiles)  # the older run, whole
    damage(copy_run(profiles, NEWER))
    args = [*command, "--profiles", profiles]
    if command[0] == "dashboard":
        args += ["--out", tmp_path / "d.html"]
    line = one_line_error(invoke(*args), "newest run", NEWER, "damaged", "manifest.json")
    assert RUN in line  # the older run is named: read it by name
    one_line_error(invoke(*args, "--force"), NEWER, "damaged")  # nothing to force: no manifest
    assert not (tmp_path / "d.html").exists()


def test_a_damaged_manifest_named_or_older_is_said(tmp_path: Path) -> None:
    profiles = tmp_path / "profiles"
    newer = copy_run(profiles, NEWER)
    older = copy_run(profiles, "suite_chain-20261101-000000-vm-bbbbbb")
    deleted(older)
    # named: the run is damaged, not "not a profkit run"
    one_line_error(invoke("show", older), older.name, "damaged", "manifest.json is missing")
    # older than the newest: the newest is read; the dashboard's history says what it left out
    assert newer.name in quiet_ok(invoke("show", "--profiles", profiles)).stdout
    result = quiet_ok(invoke("dashboard", "--profiles", profiles, "--out", tmp_path / "d.html"))
    said = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(said) == 1 and older.name in said[0] and "left out of the history" in said[0]


def test_a_capture_in_progress_is_no_damaged_run(tmp_path: Path) -> None:
    profiles = tmp_path / "profiles"
    copy_run(profiles)
    (profiles / f"{store.TMP_PREFIX}{NEWER}").mkdir()  # a capture's temp folder, no manifest yet
    assert RUN in quiet_ok(invoke("show", "--profiles", profiles)).stdout


def test_only_damaged_runs_are_not_swapped_for_the_example(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PROFKIT_PROFILES")
    not_json(copy_run(tmp_path / "profiles", NEWER))
    line = one_line_error(invoke("show"), NEWER, "damaged")
    assert "example" not in line


# --- an edited manifest ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "edit",
    [
        lambda m: m.update(kernel="softmax"),
        lambda m: m["fingerprint"].update(gpu="NVIDIA A100-SXM4-80GB"),
        lambda m: m["ceilings"].update(copy_gbps=m["ceilings"]["copy_gbps"] / 2),
        lambda m: m.update(run_id="suite_chain-20261201-000000-vm-cccccc"),
        lambda m: m.update(counters={"status": "ok"}),
        lambda m: m.pop("fingerprint"),
    ],
    ids=["kernel", "gpu", "copy-ceiling", "run-id", "counters", "dropped-field"],
)
def test_an_edited_manifest_is_damage(tmp_path: Path, edit) -> None:
    run = copy_run(tmp_path, sealed=True)
    manifest = json.loads((run / store.MANIFEST).read_text())
    edit(manifest)
    (run / store.MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    one_line_error(invoke("show", run), "damaged", "manifest.json", "own checksum", "--force")
    result = quiet_ok(invoke("show", run, "--force"))
    assert "DAMAGED RUN" in result.stdout and "manifest.json" in result.stderr


def test_a_manifest_laid_out_anew_is_the_same_manifest(tmp_path: Path) -> None:
    run = copy_run(tmp_path, sealed=True)
    manifest = json.loads((run / store.MANIFEST).read_text())
    shown = " ".join(quiet_ok(invoke("show", run)).stdout.split())
    assert "verified against the manifest's checksums, and the manifest against its own" in shown
    # its keys in another order, another indent: the content is what the checksum covers
    (run / store.MANIFEST).write_text(json.dumps(dict(reversed(manifest.items())), indent=1))
    assert "against its own" in " ".join(quiet_ok(invoke("show", run)).stdout.split())


def test_runs_stored_before_the_manifest_checksum_still_read() -> None:
    # checksummed files, a manifest without its own checksum: read, and said
    peer = stored_run("softmax-20261202-022225-vm-2ee1ba")
    shown = " ".join(quiet_ok(invoke("show", peer)).stdout.split())
    assert "verified against the manifest's checksums (the manifest itself unverified" in shown
    # no checksums at all: unverified, as before
    assert "files: unverified" in quiet_ok(invoke("show", stored_run(RUN))).stdout


# --- explain with an empty --variant or --case ----------------------------------------------------


@pytest.mark.parametrize(
    "option, value", [("--variant", ""), ("--variant", "  "), ("--case", ""), ("--case", " ")]
)
def test_an_empty_variant_or_case_is_refused(option: str, value: str) -> None:
    line = one_line_error(invoke("explain", stored_run(RUN), option, value), option, "names no")
    assert "its variants are" in line


# --- the damage said once, and marked in csv and json ---------------------------------------------


def test_the_dashboard_says_a_damage_once(tmp_path: Path) -> None:
    profiles = tmp_path / "profiles"
    copy_run(profiles)
    run = copy_run(profiles, NEWER, sealed=True)
    edited(run / store.CASES)
    args = ["dashboard", "--profiles", profiles, "--out", tmp_path / "d.html"]
    one_line_error(invoke(*args), NEWER, "damaged", "cases.csv")  # one line: no warning before it
    for named in ([], ["--kernel", "suite_chain"]):
        result = quiet_ok(invoke(*args, *named, "--force"))
        said = [line for line in result.stderr.splitlines() if line.strip()]
        assert len(said) == 1 and said[0].startswith("warning: DAMAGED run"), result.stderr
    # --kernel reads the kernel's newest run as show does: damaged, refused, never an older one
    one_line_error(invoke(*args, "--kernel", "suite_chain"), NEWER, "damaged")


def test_force_csv_and_json_carry_the_damaged_mark(tmp_path: Path) -> None:
    run = copy_run(tmp_path, sealed=True)
    whole = copy_run(tmp_path / "whole", sealed=True)
    edited(run / store.CASES)
    csv = pd.read_csv(
        io.StringIO(quiet_ok(invoke("show", run, "--force", "--format", "csv")).stdout)
    )
    assert csv["damaged"].str.contains("DAMAGED RUN").all() and len(csv)
    rows = json.loads(quiet_ok(invoke("show", run, "--force", "--format", "json")).stdout)
    assert all("DAMAGED RUN" in row["damaged"] for row in rows)
    explained = json.loads(quiet_ok(invoke("explain", run, "--force", "--format", "json")).stdout)
    assert "DAMAGED RUN" in explained["damaged"]
    compared = quiet_ok(invoke("compare", whole, run, "--force", "--format", "csv")).stdout
    marks = pd.read_csv(io.StringIO(compared))["damaged"]
    assert marks.str.startswith(f"{run.name}: DAMAGED RUN").all() and len(marks)
    compared = quiet_ok(invoke("compare", whole, run, "--force", "--format", "json")).stdout
    assert all(row["damaged"] == marks[0] for row in json.loads(compared))
    # a whole run: no such column or key
    assert "damaged" not in quiet_ok(invoke("show", whole, "--format", "csv")).stdout
    assert "damaged" not in json.loads(
        quiet_ok(invoke("explain", whole, "--format", "json")).stdout
    )
