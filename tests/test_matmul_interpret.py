"""The lab's tiled and persistent (tensor-descriptor) matmuls, checked on the CPU through Triton's
interpreter (small shapes). bf16 runs with its operands widened to fp32 before tl.dot (the
interpreter's bf16 dot is broken; kernels/matmul.py _widen): addressing, masks, descriptors and
the bf16 output cast are exercised, the bf16 Tensor Core product only on the GPU."""

import importlib
import os

import pytest

os.environ["TRITON_INTERPRET"] = "1"  # before the kernel module is (re)loaded below

from profkit.capture import CaptureOptions, check_shapes  # noqa: E402
from profkit.errors import ProfkitError  # noqa: E402
from profkit.measure.correctness import check  # noqa: E402
from profkit.spec import find_spec, parse_shape  # noqa: E402

SPEC = find_spec("matmul")
LAB = importlib.import_module("profkit_lab.matmul")
MAX_REL = {"float16": 1e-3, "bfloat16": 8e-3}  # output rounding: ~2^-12 / 2^-8 (truncated)


@pytest.mark.parametrize("dtype", SPEC.dtypes)
@pytest.mark.parametrize("shape", SPEC.interpret_shapes)
@pytest.mark.parametrize("variant", ["triton", "persistent"])
def test_variants_match_float64_reference(variant, dtype, shape):
    result = check(SPEC, SPEC.variant(variant).fn, shape, dtype, "cpu", seed=6)
    assert result.correct, result.error
    assert result.rel_err < MAX_REL[dtype]


@pytest.mark.parametrize(
    "config",
    [
        LAB.Config(32, 32, 32, 2, 2, 4),  # several K steps, grouped order over 3x4 tiles
        LAB.Config(64, 32, 16, 8, 2, 4),  # ragged edges in M (96 = 64 + 32) and N
        LAB.Config(16, 64, 32, 1, 2, 4, subtile=2),  # the persistent kernel's split epilogue
    ],
)
@pytest.mark.parametrize("variant", ["triton", "persistent"])
def test_configs_cover_every_tile(variant, config):
    # 96x112x80: no block divides every dimension, so the edge paths run: masks and wrapped
    # rows in the tiled kernel, the descriptors' bounds in the persistent one
    fn = getattr(LAB, {"triton": "matmul_tiled", "persistent": "matmul_persistent"}[variant])
    result = check(SPEC, lambda i: fn(i, config), (96, 112, 80), "float16", "cpu", seed=2)
    assert result.correct, result.error


def test_decode_table_drives_launch_config():
    assert LAB.launch_config(128, 8192, 8192) == LAB.DECODE[128]
    assert LAB.launch_config(100, 8192, 8192) == LAB.DECODE[128]
    assert LAB.launch_config(128, 8192, 8192, persistent=True) == LAB.PERSISTENT_DECODE[128]
    assert LAB.launch_config(8, 8192, 8192) == LAB.DECODE[16]


def test_persistent_programs_loop_over_more_tiles_than_programs(monkeypatch):
    # with 2 "SMs", each program must take several tiles in turn (the persistent loop itself)
    monkeypatch.setattr(LAB, "SMS", 2)
    config = LAB.Config(16, 16, 32, 2, 2, 4)
    fn = lambda i: LAB.matmul_persistent(i, config)  # noqa: E731
    assert check(SPEC, fn, (48, 64, 64), "float16", "cpu", seed=3).correct


def test_wrong_kernel_is_caught():
    fn = lambda i: LAB.matmul_tiled(i).mul_(1.05)  # noqa: E731
    result = check(SPEC, fn, (64, 64, 64), "float16", "cpu", seed=1)
    assert not result.correct and "outside tolerance" in result.error


def test_shape_convention_is_m_n_k():
    inputs = SPEC.make_inputs(parse_shape("16x128x64"), "float16", "cpu", None)
    assert inputs["a"].shape == (16, 64) and inputs["b"].shape == (64, 128)
    assert inputs["out"].shape == (16, 128)


def test_bytes_and_flops_model():
    # 4096x14336x4096 bf16 (M x N x K): A 4096x4096, B 4096x14336, C 4096x14336, 2 bytes each
    assert SPEC.bytes_moved((4096, 14336, 4096), 2) == 2 * (
        4096 * 4096 + 4096 * 14336 + 4096 * 14336
    )
    assert SPEC.bytes_moved((4096, 14336, 4096), 2) == 268_435_456
    assert SPEC.flops((8192, 8192, 8192)) == 1_099_511_627_776
    assert SPEC.flops((16, 8192, 8192)) == 2 * 16 * 8192 * 8192


def test_a_two_dimensional_shape_is_an_input_error():
    opts = CaptureOptions(
        dtypes=("float16",), shapes=((64, 64),), variants=("triton",), root=".", interpret=True
    )
    with pytest.raises(ProfkitError, match="does not take shape '64x64'.*takes MxNxK shapes"):
        check_shapes(SPEC, opts)


@pytest.mark.parametrize(
    "shape,bm",
    [((16, 8192, 8192), 16), ((128, 8192, 8192), 128), ((8192, 8192, 8192), 128)],
)
def test_launch_config_per_shape_class(shape, bm):
    cfg = LAB.launch_config(*shape)
    assert cfg.bm == bm
    if shape[0] <= 128:  # decode: at least ~one program per SM at N = 8192
        assert shape[1] // cfg.bn >= 128
    else:
        assert (cfg.bm, cfg.bn, cfg.bk) == (128, 256, 64)
        assert LAB.launch_config(*shape, persistent=True).subtile == 2  # split epilogue


@pytest.mark.parametrize(
    "shape,cls",
    [
        ((4096, 4096, 4096), "short"),  # 512 tiles of 128x256, K = 4096
        ((1024, 8192, 8192), "large"),  # 256 tiles, but K = 8192
        ((4096, 14336, 4096), "large"),  # 1792 tiles
        ((8192, 8192, 8192), "large"),
        ((100, 8192, 8192), 128),
        ((129, 64, 64), "short"),
    ],
)
def test_shape_class(shape, cls):
    assert LAB.shape_class(*shape) == cls


def test_one_table_entry_switches_a_shape_class(monkeypatch):
    # the probe's winner goes in by editing one entry; the other class keeps its config
    new = LAB.Config(256, 128, 64, 8, 4, 8, 2)
    monkeypatch.setitem(LAB.PERSISTENT_LARGE, "short", new)
    assert LAB.launch_config(4096, 4096, 4096, persistent=True) == new
    assert LAB.launch_config(8192, 8192, 8192, persistent=True) != new
    monkeypatch.setitem(LAB.DECODE, 128, LAB.Config(128, 64, 64, 8, 8, 4))
    assert LAB.launch_config(128, 8192, 8192).stages == 8
    assert LAB.launch_config(16, 8192, 8192) == LAB.DECODE[16]
