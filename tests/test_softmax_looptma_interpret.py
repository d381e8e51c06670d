"""The descriptor-fed loop path (looptma) on the CPU through Triton's interpreter: chunked rows,
a last chunk that runs past the row (its box reads the next row, or zeros past the tensor, and
must be masked), rows the 128-byte view cannot take (the plain loop instead)."""

import importlib
import os

import pytest
import torch

os.environ["TRITON_INTERPRET"] = "1"  # before the kernel module is (re)loaded below

from profkit.spec import find_spec  # noqa: E402
from profkit.timing import check  # noqa: E402

SPEC = find_spec("softmax")
LAB = importlib.import_module("profkit_lab.softmax")


@pytest.mark.parametrize(
    "shape,block,stages",
    [
        ((3, 2048), 512, 3),  # 4 whole chunks per row
        ((3, 1088), 512, 2),  # 2 chunks and a 64-element (fp32: 64) tail: masked by column
        ((2, 512), 512, 3),  # one chunk
        ((4, 96), 512, 2),  # a row shorter than a chunk (192 / 384 bytes: whole 128-byte rows)
    ],
)
@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_looptma_matches_float64(shape, block, stages, dtype):
    config = ("looptma", block, stages, 4, False)
    result = check(SPEC, lambda i: LAB.softmax_triton(i, config), shape, dtype, "cpu", seed=4)
    assert result.correct, result.error


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_a_grid_smaller_than_the_rows_walks_them(dtype):
    # 1 program per "SM" (2 on the CPU) walking 5 rows: rows pid, pid + 2, ...
    config = ("looptma", 512, 2, 4, 1)
    result = check(SPEC, lambda i: LAB.softmax_triton(i, config), (5, 1088), dtype, "cpu", seed=6)
    assert result.correct, result.error


def test_looptma_masks_the_next_rows_values():
    # a large value right after row 0's end lands in row 0's last box: without the column mask
    # it would set row 0's max and sum
    x = torch.randn(2, 1088, dtype=torch.float32)
    x[1, :64] = 30.0
    out = torch.empty_like(x)
    LAB.softmax_triton({"x": x, "out": out}, ("looptma", 512, 2, 4, False))
    torch.testing.assert_close(out.double(), torch.softmax(x.double(), -1), atol=1e-6, rtol=1e-5)


def test_rows_the_view_cannot_take_use_the_plain_loop(monkeypatch):
    # 1000 fp16 columns are 2000 bytes, not whole 128-byte pieces: looptma falls back
    called = []
    monkeypatch.setattr(LAB, "_softmax_looptma_kernel", called)  # would fail if launched
    assert not LAB._tma_rows(torch.empty(3, 1000, dtype=torch.float16))
    result = check(
        SPEC,
        lambda i: LAB.softmax_triton(i, ("looptma", 512, 2, 4, False)),
        (3, 1000),
        "float16",
        "cpu",
        seed=4,
    )
    assert result.correct, result.error
