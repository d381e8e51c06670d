"""The lab's fused residual add + RMSNorm, checked on the CPU through Triton's interpreter."""

import importlib
import os

import pytest
import torch

os.environ["TRITON_INTERPRET"] = "1"  # before the kernel module is (re)loaded below

from profkit.measure.correctness import check  # noqa: E402
from profkit.spec import find_spec  # noqa: E402

SPEC = find_spec("add_rmsnorm")
LAB = importlib.import_module("profkit_lab.add_rmsnorm")
MAX_REL = {"float32": 1e-6, "float16": 1e-3, "bfloat16": 1e-2}


@pytest.mark.parametrize("dtype", SPEC.dtypes)
@pytest.mark.parametrize("shape", [*SPEC.interpret_shapes, (7, 100)])
@pytest.mark.parametrize("variant", ["triton", "eager"])
def test_h_and_y_match_float64_reference(variant, dtype, shape):
    result = check(SPEC, SPEC.variant(variant).fn, shape, dtype, "cpu", seed=11)
    assert result.correct, result.error
    assert result.rel_err < MAX_REL[dtype]


CONFIGS = [
    LAB.Config(128, 2, 1, 4),  # rows packed, the last program part-masked at 7 rows
    LAB.Config(64, 1, 2, 4),  # two chunks, h read back for pass 2
    LAB.Config(32, 4, 4, 4),  # four chunks of four rows
]


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("shape", [(7, 100), (8, 128)])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_configs_cover_every_row(config, shape, dtype):
    fn = lambda inputs: LAB.add_rmsnorm_triton(inputs, config)  # noqa: E731
    result = check(SPEC, fn, shape, dtype, "cpu", seed=5)
    assert result.correct, result.error


def test_an_unwritten_h_or_a_wrong_y_is_caught():
    def h_skipped(inputs):
        h, y = LAB.add_rmsnorm_triton(inputs)
        return inputs["out"][0].fill_(float("nan")), y

    result = check(SPEC, h_skipped, (4, 64), "float32", "cpu", seed=1)
    assert not result.correct and "non-finite or unwritten" in result.error

    def y_off(inputs):
        h, y = LAB.add_rmsnorm_triton(inputs)
        return h, y * 1.01

    result = check(SPEC, y_off, (4, 64), "float32", "cpu", seed=1)
    assert not result.correct and "outside tolerance" in result.error


def test_a_config_short_of_the_row_is_refused():
    inputs = SPEC.make_inputs((2, 100), "float32", "cpu", torch.Generator().manual_seed(0))
    with pytest.raises(ValueError, match="does not cover a row of 100"):
        LAB.add_rmsnorm_triton(inputs, LAB.Config(32, 1, 2, 4))


@pytest.mark.parametrize(
    "rows,cols,itemsize,config",
    [
        (4096, 1024, 2, LAB.Config(1024, 4, 1, 4)),  # 2 KB rows: four per program, 4 warps
        (4096, 4096, 2, LAB.Config(4096, 1, 1, 8)),  # whole rows, one per program, 16 per thread
        (4096, 4096, 4, LAB.Config(4096, 1, 1, 8)),
        (16384, 8192, 2, LAB.Config(8192, 1, 1, 16)),
        (2048, 16384, 4, LAB.Config(16384, 1, 1, 16)),  # up to 16384 elements: in registers
        (1024, 32768, 2, LAB.Config(16384, 1, 2, 16)),  # longer: two chunks, h read back
        (32, 32768, 2, LAB.Config(32768, 1, 1, 16)),  # under a wave of rows: whole rows
    ],
)
def test_launch_config_holds_rows_in_registers_as_liger_does(rows, cols, itemsize, config):
    assert LAB.launch_config(rows, cols, itemsize) == config


@pytest.mark.parametrize(
    "returns,error",
    [
        (lambda h, y: y, "1 output(s), the reference has 2"),
        (lambda h, y: (h, y, y), "3 output(s), the reference has 2"),
        (lambda h, y: (h, y[:1]), "output (1, 64) != reference (4, 64)"),
        (lambda h, y: (h, "y"), "output str != reference (4, 64)"),
    ],
)
def test_outputs_that_do_not_match_the_references_are_named(returns, error):
    fn = lambda i: returns(*LAB.add_rmsnorm_triton(i))  # noqa: E731
    result = check(SPEC, fn, (4, 64), "float32", "cpu", seed=1)
    assert not result.correct and result.error == error
