"""Issue 22: runs that are whole or refused, honest exit statuses, specs checked when they load,
and the faults a new user found (each test here failed on the code before its fix)."""

from __future__ import annotations

import os

os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported (see test_cli.py)

import textwrap  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402
from click.testing import CliRunner, Result  # noqa: E402

from profkit.cli import cli  # noqa: E402


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
    return invoke("capture", "tiny", "--from", spec, "--interpret", "--out", tmp_path / "runs", *args)


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
