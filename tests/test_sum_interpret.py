"""The lab's three sum reductions, checked through Triton's interpreter (small shapes)."""

import functools
import importlib
import os

import pytest

os.environ["TRITON_INTERPRET"] = "1"  # before the kernel module is (re)loaded below

from profkit.capture import CaptureOptions, check_shapes  # noqa: E402
from profkit.errors import ProfkitError  # noqa: E402
from profkit.measure.correctness import check  # noqa: E402
from profkit.spec import find_spec  # noqa: E402

SPEC = find_spec("sum")
LAB = importlib.import_module("profkit_lab.reduce_sum")
TRITON = ("triton_tree", "triton_atomic", "triton_onepass")


@pytest.mark.parametrize("dtype", SPEC.dtypes)
@pytest.mark.parametrize("shape", SPEC.interpret_shapes)
@pytest.mark.parametrize("variant", TRITON)
def test_variants_match_float64_reference(variant, dtype, shape):
    result = check(SPEC, SPEC.variant(variant).fn, shape, dtype, "cpu", seed=4)
    assert result.correct, result.error
    assert result.rel_err < 1e-6  # fp32 accumulation of <= 2^16 values: ~1e-8..1e-7 seen


@pytest.mark.parametrize("variant", TRITON)
@pytest.mark.parametrize("config", [(128, 3, 4), (256, 7, 4), (1024, 1, 4)])
@pytest.mark.parametrize("interleave", [False, True])
@pytest.mark.parametrize("whole", [False, True])
def test_split_configs_cover_every_element(variant, config, interleave, whole):
    # 3 and 7 splits of 3000 columns in blocks of 128/256: ragged chunks, partly masked blocks
    # (the last one owned by a program other than the first); both stage-1 block orders and
    # both loops (masked / whole blocks then the tail). The atomic kernel always interleaves
    # and picks its loop itself (whole blocks at these 4 warps)
    fn = getattr(LAB, variant.replace("triton", "sum"))
    if variant != "triton_atomic":
        fn = functools.partial(fn, interleave=interleave, whole=whole)
    elif not (interleave and whole):
        pytest.skip("the atomic kernel has one block order and one loop here")
    fn = functools.partial(fn, config=config)
    for shape in [(3000,), (5, 3000)]:
        result = check(SPEC, fn, shape, "float32", "cpu", seed=9)
        assert result.correct and result.rel_err < 1e-6, (shape, result)


def test_a_dropped_block_fails_the_tolerance():
    # the tolerance must catch a kernel that skips one block of the row
    def skips_a_block(inputs):
        short = {**inputs, "x": inputs["x"][:-128]}
        return LAB.sum_tree(short, (128, 4, 4))

    result = check(SPEC, skips_a_block, (8192,), "float32", "cpu", seed=3)
    assert not result.correct and "outside tolerance" in result.error
    # and at the sweep's sizes: one 16 KB block of a 2^26-element input (inputs have mean 1, so
    # the sum shifts by ~block / n) lies outside rtol, in both dtypes
    for dtype, (_, rtol) in SPEC.tolerances.items():
        block, _, _ = LAB.launch_config(1, 1 << 26, 4 if dtype == "float32" else 2)
        assert block / (1 << 26) > 3 * rtol


@pytest.mark.parametrize("interleave", [False, True])
def test_onepass_matches_the_tree_bitwise_and_resets_its_counters(interleave):
    # the same partials and the same fixed order over them, in one launch instead of two; the
    # counters must be back at zero after each call, or the next call never finalizes. (Here
    # numpy sums every block; the compiled order is checked in test_sum_sm90.py)
    import torch

    inputs = SPEC.make_inputs((3, 20000), "float32", "cpu", torch.Generator().manual_seed(5))
    tree = LAB.sum_tree(inputs, interleave=interleave).clone()
    for _ in range(2):
        inputs["out"].fill_(float("nan"))
        assert torch.equal(LAB.sum_onepass(inputs, interleave=interleave), tree)
        assert LAB._counters(inputs["x"].device, 3).eq(0).all()


@pytest.mark.parametrize("variant", ["sum_tree", "sum_onepass"])
@pytest.mark.parametrize("interleave", [False, True])
def test_whole_block_loop_adds_in_the_masked_loops_order(variant, interleave):
    # whole blocks unmasked, then the partial block: each lane must add the same values in the
    # same order as the masked loop. 1793 columns, 7 splits of 128-element blocks: 14 whole
    # blocks and a 1-column tail, owned by program 0 (interleaved: blocks 0, 7, 14) or by the
    # last chunk (contiguous: 3 blocks a chunk). In the tail's lane, that program sees 1e8,
    # -1e8, then 1: exact in that order, 0 if the tail came first (1 + 1e8 rounds to 1e8).
    # A lane-level order change in random data rounds away in the sums above it
    import torch

    cols = 7 * 2 * 128 + 1
    x = torch.zeros(1, cols)
    stride = 7 * 128 if interleave else 128
    x[0, [cols - 1 - 2 * stride, cols - 1 - stride, cols - 1]] = torch.tensor([1e8, -1e8, 1.0])
    fn = functools.partial(getattr(LAB, variant), config=(128, 7, 4), interleave=interleave)
    for whole in (False, True):
        assert fn({"x": x, "out": torch.empty(1)}, whole=whole).item() == 1.0, whole


def test_whole_block_loop_only_where_the_wave_still_fits():
    # the unmasked loop compiles to ~48-50 registers: 5 programs per SM at 8 warps, 2 at 16
    assert LAB.whole_blocks(8) and LAB.whole_blocks(4) and not LAB.whole_blocks(16)
    assert LAB._plan(LAB._rows(_meta(1 << 30, "float32")), None, None, None)["WHOLE"]
    assert not LAB._plan(LAB._rows(_meta(1 << 30, "bfloat16")), None, None, None)["WHOLE"]


def _meta(n, dtype):
    import torch

    return torch.empty(n, dtype=getattr(torch, dtype), device="meta")


def test_the_two_block_orders_partition_differently():
    # 3000 columns, 7 splits of 256-element blocks: contiguous chunks of 2 blocks (6 programs),
    # interleaved 7 programs each striding over 12 blocks
    assert LAB._partition(3000, 256, 7, False) == (6, 512)
    assert LAB._partition(3000, 256, 7, True) == (7, 0)


def test_atomic_variant_zeroes_its_output_first():
    # the output is poisoned (NaN) before the check: atomics into it without a memset would fail
    result = check(SPEC, SPEC.variant("triton_atomic").fn, (1 << 16,), "float32", "cpu", seed=1)
    assert result.correct


def test_bytes_and_flops_model():
    # 1-D 2^30 fp32: 4 GiB read, one fp32 written; row sums: x once + one fp32 per row
    assert SPEC.bytes_moved((1 << 30,), 4) == 4_294_967_300
    assert SPEC.bytes_moved((16384, 8192), 2) == 16384 * 8192 * 2 + 16384 * 4 == 268_500_992
    assert SPEC.flops((4096, 4096)) == 16_777_216


@pytest.mark.parametrize(
    "rows,cols,itemsize,splits",
    [
        (1, 1 << 30, 4, 528),  # one row: a full wave of programs
        (1, 1 << 16, 4, 16),  # never more splits than blocks (16 of 4096 fp32)
        (1, 1 << 16, 2, 8),  # bf16 blocks are 8192 elements
        (4096, 4096, 4, 1),  # enough rows: one program per row, no partials
        (32, 1 << 20, 2, 17),  # 32 long rows: ceil(528 / 32) programs each
    ],
)
def test_launch_config(rows, cols, itemsize, splits):
    block, got_splits, warps = LAB.launch_config(rows, cols, itemsize)
    assert got_splits == splits
    assert block * itemsize <= 16384 and warps == max(4, block // 512)


def test_a_three_dimensional_shape_is_an_input_error():
    opts = CaptureOptions(
        dtypes=("float32",), shapes=((2, 3, 4),), variants=("torch",), root=".", interpret=True
    )
    with pytest.raises(ProfkitError, match="sum takes 1-D .N. or 2-D .ROWSxCOLS. shapes"):
        check_shapes(SPEC, opts)


def test_default_sweep_has_every_size_the_goals_name():
    # run f648 was captured with --shape options that left out 2^28 and 32x2^20; the default
    # sweep (capture without --shape) must hold 2^16, 2^20, 2^24, 2^28, 2^30 and the row sums
    one_d = {s[0] for s in SPEC.shapes if len(s) == 1}
    assert one_d == {1 << 16, 1 << 20, 1 << 24, 1 << 28, 1 << 30}
    assert {(4096, 4096), (16384, 8192), (32, 1 << 20)} <= set(SPEC.shapes)
