"""The lab's vector add, checked on the CPU through Triton's interpreter (small shapes)."""

import importlib
import os

import pytest

os.environ["TRITON_INTERPRET"] = "1"  # before the kernel module is (re)loaded below

from profkit.capture import CaptureOptions, check_shapes  # noqa: E402
from profkit.errors import ProfkitError  # noqa: E402
from profkit.measure.correctness import check  # noqa: E402
from profkit.spec import find_spec  # noqa: E402

SPEC = find_spec("vector_add")
LAB = importlib.import_module("profkit_lab.vector_add")


@pytest.mark.parametrize("dtype", SPEC.dtypes)
@pytest.mark.parametrize("shape", SPEC.interpret_shapes)
def test_triton_add_matches_float64_reference(dtype, shape):
    result = check(SPEC, SPEC.variant("triton").fn, shape, dtype, "cpu", seed=5)
    assert result.correct, result.error
    # one rounding of the exact sum (the interpreter truncates to bf16: one whole ulp)
    assert result.max_abs_err <= {"float32": 1e-6, "float16": 4e-3, "bfloat16": 7e-2}[dtype]


@pytest.mark.parametrize("config", [(1024, 4), (2048, 8)])
def test_blocks_that_do_not_divide_n_leave_no_element_unwritten(config):
    fn = lambda inputs: LAB.add_triton(inputs, config)  # noqa: E731
    assert check(SPEC, fn, (3 * 1024 + 7,), "float32", "cpu", seed=2).correct


def test_wrong_kernel_is_caught():
    def off_by_one(inputs):  # skips the last element: the poisoned output must fail the check
        short = {k: v[:-1] for k, v in inputs.items()}
        LAB.add_triton(short)
        return inputs["out"]

    result = check(SPEC, off_by_one, (1000,), "float32", "cpu", seed=1)
    assert not result.correct and "unwritten" in result.error


def test_bytes_and_flops_model():
    # 2^26 fp32: read x and y, write out = 3 * 2^26 * 4 bytes; one add per element
    assert SPEC.bytes_moved((1 << 26,), 4) == 805_306_368
    assert SPEC.bytes_moved((1 << 16,), 2) == 393_216
    assert SPEC.flops((1 << 26,)) == 67_108_864


def test_a_two_dimensional_shape_is_an_input_error():
    opts = CaptureOptions(
        dtypes=("float32",), shapes=((64, 64),), variants=("triton",), root=".", interpret=True
    )
    with pytest.raises(ProfkitError, match="does not take shape '64x64'.*takes 1-D shapes N"):
        check_shapes(SPEC, opts)


@pytest.mark.parametrize("n,itemsize", [(1 << 16, 4), (1 << 20, 2), (1 << 28, 4), (1 << 28, 2)])
def test_launch_config(n, itemsize):
    # torch.add's shape at every size: the probe's winner (kernels/vector_add.py's docstring)
    assert LAB.launch_config(n, itemsize) == (1024, 4)
