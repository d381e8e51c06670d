"""The persistent split-row softmax fed through tensor descriptors ("rowsplit_tma"), on the CPU
through Triton's interpreter. The interpreter runs no inline asm and programs one at a time, so a
call runs as two launches (MODE 1 publishes every round's statistics, MODE 2 counts with a
Triton atomic and combines without waiting); the one-launch exchange (MODE 0: the asm arrival
and spin) runs only on the GPU, where the probe's float64 check is its first test."""

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


def _run(inputs, block, splits, programs, stages=3):
    LAB._rowsplit_tma(inputs["x"], inputs["out"], block, splits, 4, stages, False, programs)
    return inputs["out"]


@pytest.mark.parametrize("dtype", SPEC.dtypes)
@pytest.mark.parametrize(
    "shape,block,splits",
    [
        ((3, 1024), 256, 4),  # 12 items, P 8 in the interpreter: the 2nd round half empty
        ((5, 4096), 512, 8),  # 40 items, P 24: two rounds, the last partial
        ((4, 512), 512, 1),  # one chunk per row
    ],
)
def test_rowsplit_tma_matches_float64_reference(dtype, shape, block, splits):
    cfg = ("rowsplit_tma", block, splits, 4, 3)
    result = check(SPEC, lambda i: LAB.softmax_triton(i, cfg), shape, dtype, "cpu", seed=12)
    assert result.correct, result.error
    assert result.rel_err < MAX_REL[dtype]


@pytest.mark.parametrize("programs", [2, 6, 10])  # 5 rounds of one row, partial last, one round
def test_every_round_count_reads_and_writes_its_own_chunk(programs):
    # a wrong descriptor offset shows up as another row's or chunk's values in y
    gen = torch.Generator().manual_seed(4)
    inputs = SPEC.make_inputs((5, 512), "float16", "cpu", gen)
    inputs["x"][torch.arange(5), torch.arange(5) * 100] = 12.0  # rows differ clearly
    y = _run(inputs, 256, 2, programs)
    assert torch.allclose(y.double(), SPEC.reference(inputs), atol=1e-6, rtol=4e-3)


def test_rowsplit_tma_rescales_chunks_to_a_late_max():
    def late_spike(inputs):
        inputs["x"][:, -1] = 30.0
        return LAB.softmax_triton(inputs, ("rowsplit_tma", 128, 8, 4, 2))

    result = check(SPEC, late_spike, (3, 1024), "float32", "cpu", seed=2)
    assert result.correct and result.rel_err < 1e-6, result


def test_two_calls_on_the_same_counters_each_count_one_generation():
    LAB._COUNTERS.pop(("cpu", 3, 4), None)
    gen = torch.Generator().manual_seed(6)
    for _ in range(2):
        inputs = SPEC.make_inputs((3, 1024), "float32", "cpu", gen)
        y = _run(inputs, 256, 4, 8)
        assert torch.allclose(y.double(), SPEC.reference(inputs), atol=1e-8, rtol=1e-5)
    assert LAB._COUNTERS[("cpu", 3, 4)].tolist() == [8, 8, 8]


def test_rows_the_descriptors_cannot_take_fall_back_to_rowsplit():
    # ragged rows (1000 is no multiple of the chunk), rows apart in memory, and a row whose
    # elements are not adjacent (made contiguous first): the counter exchange
    for shape, cut in (
        ((3, 1000), None),
        ((3, 1024), slice(0, 1024)),
        ((3, 1024), slice(0, None, 2)),
    ):
        gen = torch.Generator().manual_seed(8)
        inputs = SPEC.make_inputs(shape, "float32", "cpu", gen)
        if cut is not None:
            inputs["x"] = torch.randn(3, 2048, generator=gen)[:, cut]
        assert not LAB._tma_split_rows(inputs["x"].reshape(3, -1), inputs["out"], 256)
        y = LAB.softmax_triton(inputs, ("rowsplit_tma", 256, 4, 4, 3))
        assert torch.allclose(y.double(), SPEC.reference(inputs), atol=1e-8, rtol=1e-5)


def test_rowsplit_tma_from_the_config_table(monkeypatch):
    # the 5th field is the pipeline's stages, for every item size
    monkeypatch.setitem(LAB.CONFIG, "long", ("rowsplit_tma", 8192, None, None, 3))
    assert LAB.launch_config(1024, 32768, 4) == ("rowsplit_tma", 8192, 4, 4, 3)
    assert LAB.launch_config(1024, 32768, 2) == ("rowsplit_tma", 8192, 4, 8, 3)
