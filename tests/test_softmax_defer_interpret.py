"""The persistent split-row softmax with each chunk's normalization deferred a round
("rowsplit_defer"), on the CPU through Triton's interpreter. Programs run one at a time there, so
a call runs as two launches (MODE 1 publishes every round's statistics, MODE 2 combines without
waiting); the one-launch wait (MODE 0) runs here only where no program waits for a later one
(S = 1) or where the wait must give up."""

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
FLAGS = [(True, False), (False, False), (True, True), (False, True)]  # (carry, prefetch)


def _run(inputs, block, splits, programs, carry, prefetch, single_launch=False, max_spins=1 << 16):
    x, out = inputs["x"], inputs["out"]
    LAB._rowsplit_defer(
        x, out, block, splits, 4, carry, prefetch, single_launch, programs, max_spins
    )
    return out


@pytest.mark.parametrize("carry,prefetch", FLAGS)
@pytest.mark.parametrize("dtype", SPEC.dtypes)
@pytest.mark.parametrize(
    "shape,block,splits",
    [
        ((3, 1000), 256, 4),  # ragged last chunk; 12 items, P 8: the 2nd round half empty
        ((2, 600), 256, 4),  # the 4th chunk wholly past the row: (-inf, 0) stats, nothing stored
        ((5, 4096), 512, 8),  # 40 items, P 24: two rounds, the last partial
    ],
)
def test_rowsplit_defer_matches_float64_reference(carry, prefetch, dtype, shape, block, splits):
    cfg = ("rowsplit_defer", block, splits, 4, carry, prefetch)
    result = check(SPEC, lambda i: LAB.softmax_triton(i, cfg), shape, dtype, "cpu", seed=12)
    assert result.correct, result.error
    assert result.rel_err < MAX_REL[dtype]


@pytest.mark.parametrize("programs", [2, 6, 10])  # 5 rounds of one row, partial last, one round
@pytest.mark.parametrize("carry,prefetch", FLAGS)
def test_every_round_count_normalizes_the_right_chunk(programs, carry, prefetch):
    # round k - 1's chunk is normalized in iteration k (carried or re-read) and round k + 1's
    # may be loaded in iteration k: a wrong carry shows up as another row's values in y
    gen = torch.Generator().manual_seed(4)
    inputs = SPEC.make_inputs((5, 300), "float16", "cpu", gen)
    inputs["x"][torch.arange(5), torch.arange(5) * 50] = 12.0  # rows differ clearly
    y = _run(inputs, 256, 2, programs, carry, prefetch)
    assert torch.allclose(y.double(), SPEC.reference(inputs), atol=1e-6, rtol=4e-3)


def test_rowsplit_defer_rescales_chunks_to_a_late_max():
    def late_spike(inputs):
        inputs["x"][:, -1] = 30.0
        return LAB.softmax_triton(inputs, ("rowsplit_defer", 128, 8, 4, True, False))

    result = check(SPEC, late_spike, (3, 1000), "float32", "cpu", seed=2)
    assert result.correct and result.rel_err < 1e-6, result


def test_two_calls_on_the_same_counters_each_count_one_generation():
    LAB._COUNTERS.pop(("cpu", 3, 4), None)
    gen = torch.Generator().manual_seed(6)
    for _ in range(2):
        inputs = SPEC.make_inputs((3, 1000), "float32", "cpu", gen)
        y = _run(inputs, 256, 4, 8, carry=False, prefetch=True)
        assert torch.allclose(y.double(), SPEC.reference(inputs), atol=1e-8, rtol=1e-5)
    assert LAB._COUNTERS[("cpu", 3, 4)].tolist() == [8, 8, 8]


@pytest.mark.parametrize("carry,prefetch", FLAGS)
def test_one_launch_runs_in_the_interpreter_when_no_program_waits(carry, prefetch):
    # MODE 0 with S = 1: a row is complete once its one program has arrived, so every poll
    # (a round later) finds it complete; 5 rows over 2 programs: 3 rounds, the last with one item
    gen = torch.Generator().manual_seed(5)
    inputs = SPEC.make_inputs((5, 300), "float32", "cpu", gen)
    y = _run(inputs, 512, 1, 2, carry, prefetch, single_launch=True)
    assert torch.allclose(y.double(), SPEC.reference(inputs), atol=1e-8, rtol=1e-5)


def test_the_wait_gives_up_with_a_nan_row_instead_of_hanging():
    # program 0 runs all its rounds before program 1 starts (a sibling never resident): both of
    # its waits give up after MAX_SPINS and its chunks come out NaN; program 1 then completes
    # every row's generation and writes its chunks; the counters still count S
    LAB._COUNTERS.pop(("cpu", 2, 2), None)
    x = torch.randn(2, 256)
    out = torch.empty_like(x)
    y = _run({"x": x, "out": out}, 128, 2, 2, True, False, single_launch=True, max_spins=4)
    assert torch.isnan(y[:, :128]).all() and torch.isfinite(y[:, 128:]).all()
    assert LAB._COUNTERS[("cpu", 2, 2)].tolist() == [2, 2]


def test_programs_must_hold_whole_rows():
    x = torch.randn(2, 300)
    with pytest.raises(ValueError, match="multiple"):
        _run({"x": x, "out": torch.empty_like(x)}, 128, 4, 6, True, False)


def test_rowsplit_defer_from_the_config_table(monkeypatch):
    # the 5th field is CARRY for every item size, the 6th PREFETCH
    monkeypatch.setitem(LAB.CONFIG, "long", ("rowsplit_defer", 8192, None, None, True, True))
    assert LAB.launch_config(1024, 32768, 4) == ("rowsplit_defer", 8192, 4, 4, True, True)
    assert LAB.launch_config(1024, 32768, 2) == ("rowsplit_defer", 8192, 4, 8, True, True)
    monkeypatch.setitem(LAB.CONFIG, "few_long", ("rowsplit_defer", 128, None, 4, False))
    result = check(SPEC, SPEC.variant("triton").fn, (3, 40000), "float16", "cpu", seed=3)
    assert result.correct, result.error
