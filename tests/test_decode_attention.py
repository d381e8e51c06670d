"""The flash-decoding attention (kernels/_decode_attention.py) through Triton's interpreter, against
float64: ragged lengths (pos = 0, lengths ending mid-block and mid-split, empty splits), batch 1
and more, rows of the cache past the batch, fp32/fp16/bf16 inputs (fp32 math inside)."""

import importlib
import os

import pytest

os.environ["TRITON_INTERPRET"] = "1"  # before the lab's kernels are (re)loaded below

import torch  # noqa: E402

from profkit.spec import find_spec  # noqa: E402

find_spec("decode")  # registers profkit_lab with the interpreter on
DEC = importlib.import_module("profkit_lab.decode")
ATT = importlib.import_module("profkit_lab._decode_attention")
# output rounding of values O(1): a few ulps of the output dtype
ATOL = {"float32": 1e-5, "float16": 2e-3, "bfloat16": 1.6e-2}


@pytest.fixture(autouse=True)
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def cache(batch, heads, capacity, dim, dtype, rows=None, seed=0):
    gen = torch.Generator().manual_seed(seed)
    dt = getattr(torch, dtype)
    q = torch.randn(batch, heads, dim, generator=gen).to(dt)
    shape = (rows or batch, heads, capacity, dim)
    k = torch.randn(shape, generator=gen).to(dt)
    v = torch.randn(shape, generator=gen).to(dt)
    return q, k, v


# (block_n, splits, warps, stages): capacity 80 in 16-slot blocks; 3 splits -> chunk 32, splits 3
# (slots 0-31, 32-63, 64-79); 8 splits -> chunk 16, 5 splits of one block each
CONFIGS = [None, (16, 3, 4, 2), (16, 8, 4, 2), (32, 1, 4, 1)]


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_ragged_rows_match_float64(dtype, config):
    # pos 0 (one slot: every later split empty), 37 (mid-block, mid-split), 79 (full capacity),
    # 31 (ends on a split's last slot), 16 (the first slot of a block)
    pos = torch.tensor([0, 37, 79, 31, 16])
    q, k, v = cache(5, 2, 80, 16, dtype, rows=7)
    out = ATT.decode_attention(q, k, v, pos, config)
    ref = ATT.reference(q, k, v, pos)
    assert out.dtype == q.dtype and out.shape == (5, 2 * 16)
    assert torch.isfinite(out).all()
    err = (out.double() - ref).abs().max()
    assert err <= ATOL[dtype], err


@pytest.mark.parametrize("pos", [0, 5, 191, 192, 700, 1039])
def test_batch_one_split_across_the_capacity(pos):
    # batch 1: launch_config asks for 8 splits of capacity 1040 (17 64-slot blocks), which become
    # 6 splits of 3 blocks (192 slots): pos 191 ends split 0, 192 starts split 1, 1039 ends the
    # last, partial, split
    q, k, v = cache(1, 4, 1040, 32, "float16", seed=pos)
    p = torch.tensor([pos])
    assert ATT.launch_config(1, 4, 1040, 32) == (64, 8, 4, 2)
    for config in (None, (32, 7, 4, 2)):
        out = ATT.decode_attention(q, k, v, p, config)
        ref = ATT.reference(q, k, v, p)
        assert torch.allclose(out.double(), ref, atol=ATOL["float16"], rtol=0)


def test_slots_past_pos_are_never_read():
    # NaN in every slot past pos: a kernel that reads (or weighs) them returns NaN
    pos = torch.tensor([0, 20, 47])
    q, k, v = cache(3, 2, 64, 16, "float32")
    ref = ATT.reference(q, k, v, pos)
    for t in (k, v):
        for b, n in enumerate(pos.tolist()):
            t[b, :, n + 1 :] = float("nan")
    for config in CONFIGS:
        out = ATT.decode_attention(q, k, v, pos, config)
        assert torch.allclose(out.double(), ref, atol=1e-5, rtol=0), config


def test_a_wrong_length_fails_the_reference():
    # the check can fail: attending one slot short of pos differs from the reference
    pos = torch.tensor([9, 30])
    q, k, v = cache(2, 2, 48, 16, "float32")
    out = ATT.decode_attention(q, k, v, pos - 1, (16, 2, 4, 2))
    assert not torch.allclose(out.double(), ATT.reference(q, k, v, pos), atol=1e-3, rtol=0)


def test_split_count_depends_on_shapes_only():
    # graph-safe: the grid comes from batch, heads and capacity; many splits at batch 1, one
    # once batch x heads alone fills the SMs WAVES times over
    assert ATT.launch_config(1, 32, 2064, 128)[1] >= 8
    assert ATT.launch_config(32, 32, 2064, 128)[1] == 3  # 16 waves of 132 SMs: 2112 programs
    assert ATT.launch_config(128, 32, 2064, 128)[1] == 1
    assert ATT.launch_config(1, 32, 16, 128)[1] == 1


def test_attention_fused_matches_the_eager_attention_of_a_step():
    gen = torch.Generator().manual_seed(3)
    tiny = DEC.Dims(hidden=64, heads=4, intermediate=96)
    inp = {
        **DEC.make_weights(tiny, "float32", "cpu", gen),
        **DEC.make_state(tiny, 4, 40, "float32", "cpu", gen, lengths=[0, 17, 40, 33]),
    }
    q = DEC.pre_attention(inp, DEC.rms_eager)
    assert torch.allclose(DEC.attention_fused(inp, q), DEC.attention(inp, q), atol=1e-5)
    assert DEC.KERNELS["fused"][1] is DEC.attention_fused
    assert DEC.KERNELS["eager"] == (DEC.rms_eager, DEC.attention)
