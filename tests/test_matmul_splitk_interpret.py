"""Split-K with in-kernel reduction (Config REDUCE "last") and the tiled kernel's TMA loads, on
the CPU through Triton's interpreter. The interpreter runs programs one after another, so the
last arriver is split SPLIT_K - 1 unless a test presets the counters (test_any_split_can_be_last);
calls are replayed to check that the counters reset themselves."""

import importlib
import os

import pytest
import torch

os.environ["TRITON_INTERPRET"] = "1"  # before the kernel module is (re)loaded below

from profkit.spec import find_spec  # noqa: E402
from profkit.timing import check  # noqa: E402

SPEC = find_spec("matmul")
LAB = importlib.import_module("profkit_lab.matmul")


def _last(bm, bn, bk, split_k, tma=False):
    return LAB.Config(bm, bn, bk, 2, 2, 4, 1, split_k, "last", tma)


@pytest.mark.parametrize(
    "shape,config",
    [
        ((16, 64, 128), _last(16, 32, 16, 2)),  # 8 K tiles over 2 splits, 2 output tiles
        ((32, 128, 256), _last(16, 64, 32, 4)),  # 8 K tiles over 4 splits, 4 output tiles
        ((32, 64, 64), _last(32, 64, 16, 4)),  # one output tile, 4 splits of one K tile
        ((24, 80, 80), _last(16, 32, 16, 3)),  # ragged M, N; 5 K tiles: 2, 2, 1
        ((16, 64, 80), _last(16, 32, 16, 4)),  # 5 K tiles over 4 splits: the last is empty
        ((32, 128, 256), _last(16, 64, 32, 2, tma=True)),  # with descriptor loads
        ((24, 80, 80), _last(16, 32, 16, 3, tma=True)),  # descriptors' bounds at ragged edges
    ],
)
@pytest.mark.parametrize("dtype", SPEC.dtypes)
def test_last_arriver_split_k_matches_float64(shape, config, dtype):
    result = check(SPEC, lambda i: LAB.matmul_tiled(i, config), shape, dtype, "cpu", seed=7)
    assert result.correct, result.error


@pytest.mark.parametrize("config", [_last(16, 32, 16, 2), _last(16, 32, 16, 3)])
def test_counters_reset_for_replay(config):
    # the same workspace across calls (as a CUDA graph replays): counters back to 0 after each
    # call, and a second and third call on new inputs are still right
    shape = (24, 80, 80)
    gen = torch.Generator().manual_seed(3)
    for _ in range(3):
        inputs = SPEC.make_inputs(shape, "float16", "cpu", gen)
        out = LAB.matmul_tiled(inputs, config)
        torch.testing.assert_close(out.double(), SPEC.reference(inputs), atol=4e-3, rtol=4e-3)
        tiles = 2 * 3  # ceil(24 / 16) x ceil(80 / 32)
        _, counters = LAB._splitk_workspace(out.device, 24, 80, tiles, config)
        assert counters.tolist() == [0] * tiles


def test_a_stuck_counter_is_caught():
    # a counter that does not start at 0 makes no split the last one: C is never written, so
    # the check must fail (guards the tests above against a reduce that never runs)
    config, shape = _last(16, 32, 16, 2), (16, 64, 64)
    _, counters = LAB._splitk_workspace(torch.device("cpu"), 16, 64, 2, config)
    counters.fill_(5)
    try:
        fn = lambda i: LAB.matmul_tiled(i, config)  # noqa: E731
        assert not check(SPEC, fn, shape, "float16", "cpu", seed=1).correct
    finally:
        counters.zero_()


def test_any_split_can_be_last():
    # on the GPU any split may arrive last. Preset every counter to SPLIT_K - 1 after a call on
    # the same inputs (W holds the right partials): split 0 is then the last arriver, sums its
    # own partial from registers and the others from W, and must give the same bits
    config = _last(16, 32, 16, 2)
    inputs = SPEC.make_inputs((16, 64, 128), "float16", "cpu", torch.Generator().manual_seed(8))
    first = LAB.matmul_tiled(inputs, config).clone()
    _, counters = LAB._splitk_workspace(torch.device("cpu"), 16, 64, 2, config)
    counters.fill_(1)
    inputs["out"].zero_()
    assert torch.equal(LAB.matmul_tiled(inputs, config), first)
    assert counters.tolist() == [1, 1]  # split 0 reset to 0, then split 1 arrived: back to 1
    counters.zero_()


def test_sum_order_is_fixed():
    # bit-identical outputs across repeated calls on the same inputs (fixed s = 0..S-1 order)
    config = _last(16, 32, 16, 4)
    inputs = SPEC.make_inputs((16, 64, 128), "float16", "cpu", torch.Generator().manual_seed(5))
    first = LAB.matmul_tiled(inputs, config).clone()
    assert torch.equal(LAB.matmul_tiled(inputs, config), first)


def test_config_defaults_keep_old_entries():
    old = LAB.Config(128, 64, 64, 8, 8, 4)
    assert old.reduce == "launch" and not old.tma and not old.rot and len(old) == 12
    assert LAB.DECODE[128] == old  # the shipped entry is unchanged
    assert LAB.DECODE[32].reduce == "launch" and LAB.DECODE[32][7] == 1  # and no split-K at 32
    with pytest.raises(AssertionError):
        LAB.Config(16, 64, 64, 8, 4, 4, 1, 2, "atomic")


def _probe6_configs():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parents[1] / "bench"))
    import probe_matmul6

    return sorted({c for cands in probe_matmul6.CANDIDATES.values() for c in cands}, key=str)


@pytest.mark.parametrize("impl,config", _probe6_configs())
def test_probe6_candidates_cover_ragged_edges(impl, config):
    # every candidate the H200 probe times, at 96x112x80 (no block divides every dimension;
    # split-K leaves some splits empty): masks and wrapped rows, the descriptors' bounds
    fn = getattr(LAB, {"triton": "matmul_tiled", "persistent": "matmul_persistent"}[impl])
    result = check(SPEC, lambda i: fn(i, config), (96, 112, 80), "float16", "cpu", seed=4)
    assert result.correct, result.error


@pytest.mark.parametrize(
    "shape,config",
    [
        ((32, 128, 256), LAB.Config(32, 32, 32, 2, 2, 4, rot=True)),  # 4 N tiles, 8 K tiles
        ((24, 80, 80), LAB.Config(16, 32, 16, 2, 2, 4, rot=True)),  # ragged: masked K, wrapped M/N
        ((16, 192, 64), LAB.Config(16, 32, 64, 2, 2, 4, rot=True)),  # 1 K tile: no rotation left
    ],
)
@pytest.mark.parametrize("dtype", SPEC.dtypes)
def test_rotated_k_walk_matches_float64(shape, config, dtype):
    # ROT: each N tile starts its K loop at its own offset and wraps around
    result = check(SPEC, lambda i: LAB.matmul_tiled(i, config), shape, dtype, "cpu", seed=9)
    assert result.correct, result.error


def test_rotation_is_only_for_the_plain_loop():
    with pytest.raises(AssertionError):
        LAB.Config(16, 64, 64, 8, 4, 4, 1, 2, "last", rot=True)
    with pytest.raises(AssertionError):
        LAB.Config(16, 64, 64, 8, 4, 4, tma=True, rot=True)


@pytest.mark.parametrize("per_sm", [1, 2])
def test_persistent_programs_per_sm_walk_every_tile(monkeypatch, per_sm):
    # 2 "SMs": 2 or 4 programs loop over the 12 output tiles of a 48x64 output in 16x16 tiles
    monkeypatch.setattr(LAB, "SMS", 2)
    config = LAB.Config(16, 16, 32, 2, 2, 4, per_sm=per_sm)
    shape = (48, 64, 96)
    result = check(
        SPEC, lambda i: LAB.matmul_persistent(i, config), shape, "float16", "cpu", seed=2
    )
    assert result.correct, result.error
