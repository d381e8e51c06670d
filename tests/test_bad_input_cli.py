"""Faults a new user met on the command line (issue 31, "Faults, round 3", part A): names too long
for the file system, a full disk or output, a closed pipe, another run's bad field, a variant that
calls sys.exit, a seed out of range, what a killed capture leaves, Ctrl-C under a local Dask
cluster, and the rough edges of help and width. Each test's first line says what the user must see;
each failed on the code before its fix. Cheap: CliRunner, temp folders, the stored runs.
"""

from __future__ import annotations

import os

os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported (see test_cli.py)

import contextlib  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
from pathlib import Path  # noqa: E402

import click  # noqa: E402
import pytest  # noqa: E402
from click.testing import CliRunner, Result  # noqa: E402
from conftest import one_line_error  # noqa: E402
from stored_runs import NEWEST, OLDER, run_path, v1_v2_profiles  # noqa: E402

from profkit import store  # noqa: E402
from profkit.cli import cli  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
LONG = "x" * 256  # one byte over what a file name may hold (NAME_MAX)
# a run of the kernel whose NVIDIA rules cite the longest URLs (the Profiling Guide's)
URL_RUN = "matmul-20261130-162825-vm-cac0"


@pytest.fixture(autouse=True)
def stored_profiles(monkeypatch: pytest.MonkeyPatch) -> None:
    """The two schema-1 RMSNorm runs are the profiles/ folder (no example-run note on stderr)."""
    monkeypatch.setenv("PROFKIT_PROFILES", str(v1_v2_profiles()))


def invoke(*args: object, columns: int | None = None) -> Result:
    env = {"COLUMNS": str(columns)} if columns else None
    return CliRunner().invoke(cli, [str(a) for a in args], env=env)


# a CPU-only spec: capture --interpret runs it in this process, in milliseconds once torch is in
SPEC = """
import sys
import torch
from profkit.spec import KernelSpec, Variant

def make_inputs(shape, dtype, device, generator):
    return {{"x": torch.randn(shape, generator=generator, device=device)}}

def double(i):
    return i["x"] * 2

FIELDS = dict(
    name="tiny", description="y = 2 x",
    variants=(Variant("mine", double), Variant("torch", lambda i: i["x"] + i["x"], baseline=True)),
    make_inputs=make_inputs, reference=lambda i: i["x"].double() * 2,
    dtypes=("float32",), shapes=((8, 8),), interpret_shapes=((8, 8),),
    tolerances={{"float32": (1e-6, 1e-6)}},
    bytes_moved=lambda s, e: 2 * s[0] * s[1] * e, flops=lambda s: s[0] * s[1],
)
FIELDS.update({extra})
TINY = KernelSpec(**FIELDS)
"""


def capture(tmp_path: Path, *args: object, extra: str = "") -> Result:
    spec = tmp_path / "tiny_spec.py"
    spec.write_text(SPEC.format(extra=extra))
    return invoke(
        "capture", "tiny", "--from", spec, "--interpret", "--out", tmp_path / "runs", *args
    )


# --- tracebacks ----------------------------------------------------------------------------------

LONG_NAME_COMMANDS = {
    "show": ["show", LONG],
    "explain": ["explain", LONG],
    "compare": ["compare", NEWEST, LONG],
    "dashboard": ["dashboard", LONG],
    "explain --history": ["explain", NEWEST, "--history", LONG],
    "show .ncu-rep": ["show", f"{LONG}.ncu-rep"],
    "explain .ncu-rep": ["explain", f"{LONG}.ncu-rep"],
    "capture --from": ["capture", "tiny", "--from", f"{LONG}.py"],
    "list --from": ["list", "--from", f"{LONG}.py"],
    "show --profiles": ["show", "--profiles", LONG],
    "explain --profiles": ["explain", "--profiles", LONG],
    "profile script": ["profile", "--", "python", f"{LONG}.py"],
    "show a path over 4096": ["show", "a/" * 2100],
}


@pytest.mark.parametrize("args", LONG_NAME_COMMANDS.values(), ids=LONG_NAME_COMMANDS.keys())
def test_a_name_too_long_is_one_line(args: list[str]) -> None:
    """error: File name too long: 'xxx...xxx' (N characters), exit 1: the name cut, no traceback."""
    line = one_line_error(invoke(*args), "File name too long")
    assert len(line) < 200, line  # the 256 (or 4200) characters are cut in the middle


def test_a_name_too_long_for_the_store_is_one_line(tmp_path: Path) -> None:
    """capture --out NAME and a profiled module's name too long for a run folder: one line each."""
    one_line_error(capture(tmp_path, "--out", tmp_path / LONG), "File name too long")
    result = invoke("profile", "--out", tmp_path / "runs", "--", "python", "-m", LONG)
    line = one_line_error(result, "cannot store a run", "File name too long")
    assert len(line) < 300, line


@pytest.mark.parametrize("created", [12345, None])
def test_a_bad_field_in_another_run_leaves_this_one_readable(tmp_path: Path, created) -> None:
    """explain and dashboard of a run read it, whatever another run's manifest says `created` is."""
    for run in (OLDER, NEWEST):
        shutil.copytree(run_path(run), tmp_path / run)
    manifest = json.loads((tmp_path / OLDER / "manifest.json").read_text())
    manifest["created"] = created
    (tmp_path / OLDER / "manifest.json").write_text(json.dumps(manifest))
    for run in (NEWEST, OLDER):  # another run's field, and the run's own
        result = invoke("explain", run, "--profiles", tmp_path, "--format", "json")
        assert result.exit_code == 0, result.output


def test_another_runs_damage_leaves_this_one_readable(tmp_path: Path) -> None:
    """The bad field in a checksummed run (its manifest edited): explain and dashboard of another
    run read it, the damaged run left out of its history in one warning line, exit 0."""
    for run in (OLDER, NEWEST):
        store.seal(shutil.copytree(run_path(run), tmp_path / run))
    manifest = json.loads((tmp_path / OLDER / "manifest.json").read_text())
    manifest["created"] = 12345
    (tmp_path / OLDER / "manifest.json").write_text(json.dumps(manifest))
    want = f"warning: left out of the history: run {OLDER} is damaged: manifest.json does not"
    result = invoke("explain", NEWEST, "--profiles", tmp_path, "--format", "json")
    assert result.exit_code == 0, result.output
    [line] = result.stderr.splitlines()
    assert line.startswith(want), line
    page = tmp_path / "page.html"
    result = invoke("dashboard", NEWEST, "--profiles", tmp_path, "--out", page)
    assert result.exit_code == 0 and page.is_file(), result.output
    [line] = result.stderr.splitlines()  # said once, though two readers met it
    assert line.startswith(want), line


def _run_main(args: list[str], stdout) -> tuple[int, str]:
    """The CLI as a shell runs it (no CliRunner), its stdout the given file -> (status, stderr)."""
    err = io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(err):
        try:
            cli.main(args, prog_name="profkit")
        except SystemExit as exc:
            return int(exc.code or 0), err.getvalue()
    raise AssertionError("the CLI returned without an exit status")


FULL_OUTPUT = [
    ["show"],
    ["show", "--format", "json"],
    ["explain"],
    ["explain", "--format", "markdown"],
    ["list"],
    ["--help"],
    ["capture", "--help"],
]


@pytest.mark.parametrize("args", FULL_OUTPUT, ids=[" ".join(a) for a in FULL_OUTPUT])
def test_a_full_output_is_one_line(args: list[str]) -> None:
    """> /dev/full: error: could not write to standard output: No space left on device, exit 1."""
    with open("/dev/full", "w") as full:
        status, err = _run_main(args, full)
    assert status == 1
    assert err == "error: could not write to standard output: No space left on device\n"


@pytest.mark.parametrize("args", FULL_OUTPUT, ids=[" ".join(a) for a in FULL_OUTPUT])
def test_a_closed_pipe_exits_0_quietly(args: list[str]) -> None:
    """`profkit show | head -1`: the reader has what it wanted; exit 0, quiet (as git)."""
    read, write = os.pipe()
    os.close(read)  # the reader is gone
    with os.fdopen(write, "w") as pipe:
        assert _run_main(args, pipe) == (0, "")


def test_a_closed_pipe_in_a_real_shell() -> None:
    """`list | head -1` under pipefail: status 0, one line out, nothing on stderr."""
    done = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {sys.executable} -m profkit list | head -1"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert len(done.stdout.splitlines()) == 1


@pytest.mark.parametrize("where", ["manifest", "cases table"])
def test_a_full_disk_during_capture_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """error: could not store run ...: No space left on device; nothing was stored, no .tmp-*."""
    import errno

    import pandas as pd

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    if where == "manifest":  # the last file written, after every table
        write_text = Path.write_text

        def manifest_full(path: Path, *args, **kwargs):
            return (full if path.name == store.MANIFEST else write_text)(path, *args, **kwargs)

        monkeypatch.setattr(Path, "write_text", manifest_full)
    else:
        monkeypatch.setattr(pd.DataFrame, "to_csv", full)
    result = capture(tmp_path)  # the progress bar, then one error line
    assert result.exit_code == 1 and isinstance(result.exception, SystemExit)
    last = result.stderr.splitlines()[-1]
    assert last.startswith("error: could not store run tiny-"), result.stderr
    assert last.endswith(": No space left on device; nothing was stored")
    assert "Traceback" not in result.output
    assert list((tmp_path / "runs").iterdir()) == []


def test_ctrl_c_reaches_profkit_alone_under_a_local_cluster(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ctrl-C under --cluster local: `aborted`, exit 130, never the workers' own tracebacks.

    The terminal sends SIGINT to the whole process group: local workers are spawned with SIGINT
    blocked (from threads started while it is, as Dask's spawning threads are, even where
    multiprocessing's resource tracker starts, which unblocks it in its thread), and profkit takes
    its Ctrl-C at the sweep loop's next turn, outside Dask's own waits."""
    import multiprocessing
    import time

    from profkit import cluster

    children = []

    def spawn() -> None:  # as Dask's loop thread: a spawned process, started from a thread
        child = multiprocessing.get_context("spawn").Process(target=time.sleep, args=(30,))
        child.start()
        children.append(child)

    with cluster._ctrl_c_held():
        thread = threading.Thread(target=spawn)
        thread.start()
        thread.join()
    status = Path(f"/proc/{children[0].pid}/status").read_text()
    children[0].kill()
    blocked = int(re.search(r"SigBlk:\s*([0-9a-f]+)", status)[1], 16)
    assert blocked & (1 << (signal.SIGINT - 1)), status

    with pytest.raises(KeyboardInterrupt), cluster._ctrl_c_deferred() as asked:
        os.kill(os.getpid(), signal.SIGINT)  # taken, not raised, inside: Dask's waits go on
        for _ in range(100):
            if asked.is_set():
                break
            time.sleep(0.01)
        assert asked.is_set()
    # on a worker: the client a cancelled group left half made is no traceback at exit
    unraisable = type("Unraisable", (), {})
    noise, other = unraisable(), unraisable()
    noise.exc_value, other.exc_value = RuntimeError("IOLoop is closed"), RuntimeError("other")
    assert cluster._teardown_noise(noise) and not cluster._teardown_noise(other)
    monkeypatch.setattr(sys, "unraisablehook", sys.unraisablehook)
    cluster._quiet_client_teardown()
    hook = sys.unraisablehook
    cluster._quiet_client_teardown()  # installed once per worker process
    assert sys.unraisablehook is hook and hook.profkit


# --- wrong exit statuses -------------------------------------------------------------------------


@pytest.mark.parametrize("seed", ["99999999999999999999999", "4294967296", "-1"])
def test_an_out_of_range_seed_is_an_option_error(tmp_path: Path, seed: str) -> None:
    """error: Invalid value for '--seed': ... not in the range 0<=x<=4294967295, exit 2, no run."""
    one_line_error(capture(tmp_path, "--seed", seed), "--seed", "4294967295")
    assert capture(tmp_path, "--seed", seed).exit_code == 2
    assert not (tmp_path / "runs").exists()


EXITS = {
    "variant exit 0": ("variants=(Variant('mine', lambda i: sys.exit(0)),)", 4),
    "variant exit 3": ("variants=(Variant('mine', lambda i: sys.exit(3)),)", 4),
    "one of two exits": (
        "variants=(Variant('mine', lambda i: sys.exit(3)), Variant('torch', double))",
        3,
    ),
    "make_inputs exits": ("make_inputs=lambda *a: sys.exit('no inputs')", 4),
    "reference exits": ("reference=lambda i: sys.exit(1)", 4),
}


@pytest.mark.parametrize("extra, status", EXITS.values(), ids=EXITS.keys())
@pytest.mark.parametrize("timeout", [False, True], ids=["", "case-timeout"])
def test_a_variant_that_exits_is_that_variants_failure(
    tmp_path: Path, extra: str, status: int, timeout: bool
) -> None:
    """A case calling sys.exit: stored as incorrect, said ("called sys.exit"), exit 3 or 4."""
    result = capture(tmp_path, *(["--case-timeout", 60] if timeout else []), extra=extra)
    assert result.exit_code == status, result.output
    assert "called sys.exit" in result.stderr
    [run] = (tmp_path / "runs").iterdir()
    cases = store.load(run).cases
    assert cases[~cases.correct.astype(bool)].error.str.contains("called sys.exit").all()


# --- rough edges ---------------------------------------------------------------------------------


def _writer_killed(root: Path, how: signal.Signals) -> Path:
    """The temp folder of a capture's writer whose process was killed by `how`."""
    code = (
        "import sys, time; from pathlib import Path; from profkit import store\n"
        f"w = store.RunWriter(Path({str(root)!r}), 'tiny'); print(w.tmp, flush=True)\n"
        "time.sleep(60)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env
    )
    tmp = Path(proc.stdout.readline().strip())
    proc.send_signal(how)
    proc.wait(timeout=30)
    assert tmp.is_dir()
    return tmp


def test_a_killed_captures_leftovers_are_swept_at_the_next(tmp_path: Path) -> None:
    """note: removed 2 unfinished run folder(s) under RUNS/ left by captures that were killed."""
    runs = tmp_path / "runs"
    killed = [_writer_killed(runs, signal.SIGKILL), _writer_killed(runs, signal.SIGTERM)]
    live = store.RunWriter(runs, "tiny")  # this process: alive, never touched
    other = runs / f".tmp-tiny-20261204-000000-x-000000@another-host.{os.getpid() + 1}"
    other.mkdir()  # another host's: its process cannot be asked
    result = capture(tmp_path)
    assert result.exit_code == 0, result.output
    assert "removed 2 unfinished run folder(s)" in result.stderr
    assert not any(p.exists() for p in killed)
    assert live.tmp.is_dir() and other.is_dir()
    live.abandon()


def test_explain_case_is_case_insensitive() -> None:
    """--case "TRITON BF16" picks what "triton bf16" does, as --dtype BF16 does."""
    lower = invoke("explain", NEWEST, "--case", "triton bf16 16x8192", "--format", "json")
    upper = invoke("explain", NEWEST, "--case", "TRITON BF16 16X8192", "--format", "json")
    assert lower.exit_code == 0 and upper.exit_code == 0, upper.output
    assert json.loads(upper.stdout) == json.loads(lower.stdout)


def test_bare_profkit_prints_its_help() -> None:
    """`profkit` alone: its help on stdout, exit 0 (as git)."""
    result = invoke()
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout.startswith("Usage: ") and "Commands:" in result.stdout


def test_the_example_run_note_fits_80_columns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a fresh clone (no profiles/): the note that the example run is read fits 80 columns."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PROFKIT_PROFILES")
    result = invoke("show", "--format", "csv")
    assert result.exit_code == 0, result.output
    assert result.stderr.startswith("note: no runs under profiles/ yet: reading the example run")
    assert max(map(len, result.stderr.splitlines())) <= 80


def test_explain_verbose_fits_80_columns() -> None:
    """explain --verbose at COLUMNS=80: every line fits, the documentation's URLs whole."""
    result = invoke("explain", run_path(URL_RUN), "--verbose", columns=80)
    assert result.exit_code == 0, result.output
    assert (
        "https://docs.nvidia.com/nsight-compute/ProfilingGuide/#metrics-hw-model" in result.stdout
    )
    too_wide = [line for line in result.stdout.splitlines() if len(line) > 80]
    assert not too_wide, too_wide[:3]


def test_profile_errors_drop_the_profilers_noise_and_cut_long_lines() -> None:
    """profile's error quotes the program's stderr: no torch USDT lines, no 5000-char line."""
    from profkit.workload.profile import TAIL_LINE_CHARS, _tail_text, run_child

    usdt = "USDT:2026-12-04 15:10:41 20395:20395 SyncActivityProfilerHandler.cpp:52] profiler_start"
    code = f"import sys; print({usdt!r}, file=sys.stderr); sys.exit('boom ' + 'x' * 5000)"
    with contextlib.redirect_stderr(io.StringIO()):  # the child's stderr is echoed to ours
        status, _, tail = run_child([sys.executable, "-c", code])
    assert status == 1 and not any("USDT" in line for line in tail)
    text = _tail_text(tail)
    assert "boom" in text and len(text) < TAIL_LINE_CHARS + 40, text


def test_help_names_what_options_take() -> None:
    """capture --help lists the dtype aliases and N / MxN / MxNxK shapes; every option has help."""
    text = invoke("capture", "--help", columns=200).stdout
    for word in ("bfloat16 (bf16)", "float16 (fp16, half)", "MxNxK", "N, MxN"):
        assert word in text, word
    bare = [
        f"{name} {p.opts[0]}"
        for name, command in cli.commands.items()
        for p in command.params
        if isinstance(p, click.Option) and not p.help
    ]
    assert not bare, bare


def test_readme_says_python_c_is_refused() -> None:
    """README: `python -c CODE` is refused; profile -- python -c ...: one line naming '-c'."""
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert "(so is `python -c CODE`: the program must be a script or `-m` module" in readme
    one_line_error(invoke("profile", "--", "python", "-c", "pass"), "'-c'", "-m MODULE")


def test_the_run_writers_temp_folder_names_its_owner(tmp_path: Path) -> None:
    """A live writer's folder is never swept: it names this host and this process."""
    writer = store.RunWriter(tmp_path, "tiny")
    assert writer.tmp.name.endswith(f"@{socket.gethostname()}.{os.getpid()}")
    assert store.sweep_stale(tmp_path) == [] and writer.tmp.is_dir()
    writer.abandon()
