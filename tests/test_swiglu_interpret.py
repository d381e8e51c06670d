"""The lab's SwiGLU forward, checked on the CPU through Triton's interpreter (small shapes)."""

import importlib
import os

import pytest

os.environ["TRITON_INTERPRET"] = "1"  # before the kernel module is (re)loaded below

from profkit.measure.correctness import check  # noqa: E402
from profkit.spec import find_spec  # noqa: E402

SPEC = find_spec("swiglu")
LAB = importlib.import_module("profkit_lab.swiglu")
# fp16: one rounding of an fp32 result; bf16: the interpreter truncates (one ulp, 2^-7)
MAX_REL = {"float16": 1e-3, "bfloat16": 1e-2}


@pytest.mark.parametrize("dtype", SPEC.dtypes)
@pytest.mark.parametrize("shape", [*SPEC.interpret_shapes, (16, 1000)])
@pytest.mark.parametrize("variant", ["triton", "eager"])
def test_matches_float64_reference(variant, dtype, shape):
    # 16x1000: 16 programs of 1024, the last one part-masked
    result = check(SPEC, SPEC.variant(variant).fn, shape, dtype, "cpu", seed=11)
    assert result.correct, result.error
    assert result.rel_err < MAX_REL[dtype]


@pytest.mark.parametrize("config", [LAB.Config(128, 1), LAB.Config(256, 2), LAB.Config(2048, 4)])
@pytest.mark.parametrize("shape", [(3, 100), (8, 128)])
def test_configs_cover_every_element(config, shape):
    # 300 elements: masked; 1024: even, over 8, 4 or one program
    fn = lambda inputs: LAB.swiglu_triton(inputs, config)  # noqa: E731
    assert check(SPEC, fn, shape, "float16", "cpu", seed=3).correct


def test_a_wrong_kernel_is_caught():
    wrong = lambda i: LAB.swiglu_triton(i) * 1.01  # noqa: E731
    result = check(SPEC, wrong, (4, 64), "float16", "cpu", seed=2)
    assert not result.correct and "outside tolerance" in result.error


def test_launch_config_is_vector_adds_shape():
    # 1024 elements per 4-warp program at every size (vector_add's measured shape)
    assert {LAB.launch_config(rows * 14336) for rows in (16, 16384)} == {LAB.Config(1024, 4)}
