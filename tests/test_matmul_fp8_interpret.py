"""The FP8 (e4m3, per-tensor scales) matmul entry on the CPU: Triton's interpreter runs fp8
tl.dot exactly (fp32 accumulation), and CPU torch has _scaled_mm, so both the Triton kernel and
the baselines are checked against the float64 product of the dequantized inputs."""

import importlib
import os

import pytest
import torch

os.environ["TRITON_INTERPRET"] = "1"

from profkit.measure.correctness import check  # noqa: E402
from profkit.spec import DTYPE_ITEMSIZE, find_spec, normalize_dtype  # noqa: E402

SPEC = find_spec("matmul_fp8")
LAB = importlib.import_module("profkit_lab.matmul")
DT = "float8_e4m3fn"


@pytest.mark.parametrize("shape", SPEC.interpret_shapes)
@pytest.mark.parametrize("variant", [v.name for v in SPEC.variants])
def test_variants_match_float64_reference(variant, shape):
    result = check(SPEC, SPEC.variant(variant).fn, shape, DT, "cpu", seed=4)
    assert result.correct, result.error
    assert result.rel_err < 8e-3  # bf16 output rounding (the interpreter truncates)


def test_persistent_loops_over_tiles_with_ragged_edges(monkeypatch):
    monkeypatch.setattr(LAB, "SMS", 2)
    cfg = LAB.Config(16, 32, 32, 2, 2, 4, 2)
    fn = lambda i: LAB.matmul_fp8_persistent(i, cfg)  # noqa: E731
    assert check(SPEC, fn, (48, 80, 96), DT, "cpu", seed=5).correct


def test_a_dropped_scale_is_caught():
    # the scales are far from 1 (amax / 448), so ignoring one must fail the check
    def unscaled(inputs):
        return LAB.matmul_fp8_persistent({**inputs, "scale_b": torch.ones(())})

    assert not check(SPEC, unscaled, (64, 64, 64), DT, "cpu", seed=1).correct


def test_inputs_are_e4m3_with_column_major_b():
    inputs = SPEC.make_inputs((16, 128, 64), DT, "cpu", torch.Generator().manual_seed(0))
    a, b = inputs["a"], inputs["b"]
    assert a.dtype == b.dtype == torch.float8_e4m3fn and a.shape == (16, 64)
    assert b.shape == (64, 128) and b.t().is_contiguous() and not b.is_contiguous()
    assert inputs["out"].dtype == torch.bfloat16
    # quantization uses the format's range: the largest magnitude maps to 448
    assert float(a.float().abs().max()) == 448.0


def test_quantize_round_trip_error():
    x = torch.randn(256, 256, generator=torch.Generator().manual_seed(1))
    x8, scale = LAB.quantize(x)
    err = (x8.double() * scale.double() - x.double()).abs() / x.abs().double().clamp(min=1e-3)
    # e4m3 has 3 mantissa bits: half an ulp is 2^-4 relative for normal numbers
    assert float(err[x.abs() > 0.05].max()) <= 2**-4 + 1e-6


def test_models():
    assert SPEC.bytes_moved((4096, 4096, 4096), DTYPE_ITEMSIZE[DT]) == 4 * 4096 * 4096
    assert SPEC.flops((8192, 8192, 8192)) == 2 * 8192**3
    assert normalize_dtype(SPEC, "fp8") == DT
