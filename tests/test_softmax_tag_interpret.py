"""The generation-tagged split-row softmax ("rowsplit_tag"), on the CPU through Triton's
interpreter. The interpreter runs programs one at a time, so a call runs as two launches (MODE 1
publishes, MODE 2 combines without waiting); the one-launch wait (MODE 0) runs here only where no
program waits for a later one (S = 1) or where the wait must give up."""

import importlib
import os

import pytest

os.environ["TRITON_INTERPRET"] = "1"  # before the kernel module is (re)loaded below

import torch  # noqa: E402

from profkit.spec import find_spec  # noqa: E402
from profkit.timing import check  # noqa: E402

SPEC = find_spec("softmax")
LAB = importlib.import_module("profkit_lab.softmax")
MAX_REL = {"float32": 1e-6, "float16": 1e-3, "bfloat16": 1e-2}


def _generations(key) -> list[int]:
    return (LAB._SLOTS[key] >> 32).tolist()


@pytest.mark.parametrize("keep", [False, True, "e16"])
@pytest.mark.parametrize("dtype", SPEC.dtypes)
@pytest.mark.parametrize(
    "shape,block,splits",
    [
        ((3, 1000), 256, 4),  # ragged last chunk (1000 = 3 x 256 + 232)
        ((2, 600), 256, 4),  # the 4th chunk wholly past the row: (-inf, 0) words, nothing stored
        ((5, 4096), 512, 8),
    ],
)
def test_rowsplit_tag_matches_float64_reference(keep, dtype, shape, block, splits):
    cfg = ("rowsplit_tag", block, splits, 4, keep)
    result = check(SPEC, lambda i: LAB.softmax_triton(i, cfg), shape, dtype, "cpu", seed=12)
    assert result.correct, result.error
    assert result.rel_err < MAX_REL[dtype]


@pytest.mark.parametrize("keep,dtype", [(False, "float32"), (True, "float16"), ("e16", "float16")])
def test_rowsplit_tag_rescales_chunks_to_a_late_max(keep, dtype):
    def late_spike(inputs):
        inputs["x"][:, -1] = 30.0
        return LAB.softmax_triton(inputs, ("rowsplit_tag", 128, 8, 4, keep))

    result = check(SPEC, late_spike, (2, 1000), dtype, "cpu", seed=2)
    assert result.correct and result.rel_err < MAX_REL[dtype], result


def test_each_call_moves_every_word_one_generation():
    x = torch.randn(3, 1000)
    y = torch.empty_like(x)
    LAB._SLOTS.pop(("cpu", 3, 4), None)
    for _ in range(3):
        LAB.softmax_triton({"x": x, "out": y}, ("rowsplit_tag", 256, 4, 4, False))
    assert _generations(("cpu", 3, 4)) == [3] * (3 * 2 * 4)
    ref = torch.softmax(x.double(), -1)
    assert torch.allclose(y.double(), ref, atol=1e-8, rtol=1e-5)


def test_a_sibling_that_has_not_published_this_call_is_waited_for_not_read_stale():
    # call 1 leaves valid-looking statistics (of another x) in every word. Call 2 in one launch:
    # the interpreter runs program 0 to its end before program 1 publishes, so program 0 sees
    # program 1's words at the previous generation: it must not combine them (it gives up, NaN),
    # while program 1 finds program 0's fresh words and writes its chunk from this call's stats
    key = ("cpu", 1, 2)
    LAB._SLOTS.pop(key, None)
    x1, x2 = torch.randn(1, 256), 3 * torch.randn(1, 256)
    y = torch.empty_like(x1)
    LAB._rowsplit_tag(x1, y, 128, 2, 4, False, single_launch=False)
    LAB._rowsplit_tag(x2, y, 128, 2, 4, False, single_launch=True, max_spins=4)
    assert torch.isnan(y[0, :128]).all()
    ref = torch.softmax(x2.double(), -1)
    assert torch.allclose(y[0, 128:].double(), ref[0, 128:], atol=1e-8, rtol=1e-5)
    assert _generations(key) == [2] * 4  # still in lockstep: the next call works
    LAB._rowsplit_tag(x1, y, 128, 2, 4, False, single_launch=False)
    assert torch.allclose(y.double(), torch.softmax(x1.double(), -1), atol=1e-8, rtol=1e-5)


def test_one_launch_runs_in_the_interpreter_when_no_program_waits():
    # MODE 0 with S == 1: a program's own words complete its row, twice on the same words
    gen = torch.Generator().manual_seed(5)
    inputs = SPEC.make_inputs((4, 300), "float32", "cpu", gen)
    LAB._SLOTS.pop(("cpu", 4, 1), None)
    for _ in range(2):
        inputs["out"].zero_()
        LAB._rowsplit_tag(inputs["x"], inputs["out"], 512, 1, 4, False, single_launch=True)
        assert torch.allclose(inputs["out"].double(), SPEC.reference(inputs), atol=1e-8, rtol=1e-5)
    assert _generations(("cpu", 4, 1)) == [2] * 8


def test_the_generation_wraps_at_32_bits():
    key = ("cpu", 2, 4)
    x = torch.randn(2, 1000)
    y = torch.empty_like(x)
    LAB._SLOTS[key] = torch.full((2 * 2 * 4,), -1 << 32, dtype=torch.int64)  # generation -1
    LAB.softmax_triton({"x": x, "out": y}, ("rowsplit_tag", 256, 4, 4, False))
    assert _generations(key) == [0] * 16
    assert torch.allclose(y.double(), torch.softmax(x.double(), -1), atol=1e-8, rtol=1e-5)


def test_rowsplit_tag_from_the_config_table(monkeypatch):
    monkeypatch.setitem(LAB.CONFIG, "long", ("rowsplit_tag", 8192, None, 8, "e16"))
    assert LAB.launch_config(1024, 32768, 2) == ("rowsplit_tag", 8192, 4, 8, "e16")
    # E16 and NARROW are 16-bit forms: fp32 holds fp32 exp
    assert LAB.launch_config(1024, 32768, 4) == ("rowsplit_tag", 8192, 4, 8, False)


def test_rowsplit_tag_rejects_splits_that_are_not_a_power_of_two():
    x = torch.randn(2, 300)
    with pytest.raises(ValueError, match="power of two"):
        LAB.softmax_triton({"x": x, "out": torch.empty_like(x)}, ("rowsplit_tag", 128, 3, 4))


def test_the_asm_wait_is_a_sixth_config_field_and_leaves_the_two_launch_math_alone():
    # ASM changes only the one-launch wait (GPU); on the interpreter the call is MODE 1 + 2
    cfg = ("rowsplit_tag", 256, 4, 4, "e16", True)
    result = check(SPEC, lambda i: LAB.softmax_triton(i, cfg), (3, 1000), "float16", "cpu", seed=5)
    assert result.correct, result.error
    ptx = LAB._tag_wait_ptx(8)
    assert ptx.count("ld.relaxed.gpu.global.v2.u64") == 4 and "barrier.cta.red.or.pred" in ptx
