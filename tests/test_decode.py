"""The decode-step lab on the CPU: buckets and padding, each variant's math against float64 (the
graph variants run their captured step eagerly: capture and replay are exercised on the H200)."""

import importlib
import os

import pytest

os.environ["TRITON_INTERPRET"] = "1"  # before the lab's kernels are (re)loaded below

import torch  # noqa: E402

from profkit.measure import iteration_latency  # noqa: E402
from profkit.spec import find_spec  # noqa: E402

SPEC = find_spec("decode")  # re-executes kernels/*.py with the interpreter on
DEC = importlib.import_module("profkit_lab.decode")
TINY = DEC.Dims(hidden=64, heads=4, intermediate=96)
# rel_err bound per dtype at these sizes: output rounding, a few ulps
REL = {"float32": 1e-5, "float16": 2e-3, "bfloat16": 2e-2}


@pytest.fixture(autouse=True)
def one_thread():
    # tiny tensors: a thread pool only contends with the other processes on a shared CPU
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def tiny_inputs(batch, cache_len, dtype, seed=0, lengths=None, rows=None):
    gen = torch.Generator().manual_seed(seed)
    weights = DEC.make_weights(TINY, dtype, "cpu", gen)
    state = DEC.make_state(TINY, rows or batch, cache_len, dtype, "cpu", gen, lengths)
    return {**weights, **state}


# ---- buckets and padding ----


def test_default_buckets_follow_powers_then_multiples_of_eight():
    assert DEC.default_buckets(64) == (1, 2, 4, 8, 16, 24, 32, 40, 48, 56, 64)
    assert DEC.default_buckets(6) == (1, 2, 4, 6)
    assert DEC.default_buckets(1) == (1,)
    with pytest.raises(ValueError):
        DEC.default_buckets(0)


@pytest.mark.parametrize(
    ("n", "bucket"), [(1, 1), (3, 4), (4, 4), (5, 8), (9, 16), (17, 24), (64, 64)]
)
def test_choose_bucket_takes_the_smallest_that_fits(n, bucket):
    assert DEC.choose_bucket(n, DEC.default_buckets(64)) == bucket


def test_choose_bucket_rejects_batches_outside_the_buckets():
    with pytest.raises(ValueError, match="exceeds"):
        DEC.choose_bucket(65, DEC.default_buckets(64))
    with pytest.raises(ValueError):
        DEC.choose_bucket(0, (1, 2))


def test_padding_waste():
    assert DEC.padding_waste(5, 8) == 3 / 8
    assert DEC.padding_waste(8, 8) == 0.0
    with pytest.raises(ValueError):
        DEC.padding_waste(9, 8)


def test_batch_walk_changes_every_step_within_bounds_and_repeats_by_seed():
    walk = DEC.batch_walk(1000, 8, 32, seed=3)
    assert len(walk) == 1000 and min(walk) >= 8 and max(walk) <= 32
    assert all(a != b and abs(a - b) <= 3 for a, b in zip(walk, walk[1:], strict=False))
    assert walk == DEC.batch_walk(1000, 8, 32, seed=3) != DEC.batch_walk(1000, 8, 32, seed=4)
    assert len({DEC.choose_bucket(n, DEC.default_buckets(32)) for n in walk}) > 1


def test_capacity_holds_the_new_token_and_is_aligned():
    assert (
        DEC.capacity_for(512) == 528 and DEC.capacity_for(15) == 16 and DEC.capacity_for(16) == 32
    )


# ---- the step's math against float64 ----


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("variant", DEC.FIXED)
def test_fixed_variants_match_float64(variant, dtype):
    batch, cache_len = 3, 10
    inp = tiny_inputs(batch, cache_len, dtype, seed=hash(variant) % 1000)
    call = DEC.build(variant, inp, cache_len, capture=False)
    rows = [0, 1, 2]
    verdict = iteration_latency.check_iteration(
        lambda: call(0),
        lambda: DEC.reference(DEC.select_rows(inp, rows)),
        rows,
        SPEC.tolerances[dtype],
    )
    assert verdict["correct"], verdict["error"]
    assert verdict["rel_err"] < REL[dtype]


@pytest.mark.parametrize("variant", ["fused", "graph_fused"])
def test_fused_variants_use_the_fused_attention(variant, monkeypatch):
    calls = []
    real = DEC.attention_fused
    monkeypatch.setitem(DEC.ATTENTION, "fused", lambda inp, q: calls.append(1) or real(inp, q))
    monkeypatch.setitem(DEC.KERNELS, "fused", (DEC.rms_fused, DEC.ATTENTION["fused"]))
    inp = tiny_inputs(2, 7, "float32", lengths=[0, 7])
    DEC.build(variant, inp, 7, capture=False)(0)
    assert calls
    calls.clear()
    for baseline in ("eager", "graph"):
        DEC.build(baseline, inp, 7, capture=False)(0)
    assert not calls  # the baselines stay on the eager attention


def test_ragged_lengths_are_masked_per_row():
    # rows at different cache lengths in one fixed-shape step: the mask comes from pos on the device
    inp = tiny_inputs(3, 12, "float32", lengths=[2, 12, 7])
    out = DEC.step(inp)
    ref = DEC.reference(inp)
    assert torch.allclose(out.double(), ref, atol=1e-5, rtol=1e-5)
    # and a step that attended over every slot (no mask) would be wrong: the check can fail
    q = DEC.pre_attention(inp, DEC.rms_eager)
    unmasked = DEC.post_attention(inp, inp["x"], DEC.attention(inp, q, upto=13), DEC.rms_eager)
    assert not torch.allclose(unmasked.double(), ref, atol=1e-3, rtol=1e-3)


def test_a_step_that_misses_the_new_token_fails_the_reference():
    inp = tiny_inputs(2, 9, "float32")
    q = DEC.pre_attention(inp, DEC.rms_eager)
    a = DEC.attention(inp, q, upto=9)  # slots 0..8: the token just appended at 9 left out
    wrong = DEC.post_attention(inp, inp["x"], a, DEC.rms_eager)
    verdict = iteration_latency.check_output(wrong, DEC.reference(inp), *SPEC.tolerances["float32"])
    assert not verdict["correct"] and "outside tolerance" in verdict["error"]


def test_poison_catches_a_replay_that_stops_writing_its_output():
    inp = tiny_inputs(2, 5, "float32")
    static = DEC.step(inp)  # computed once; "replays" then return the same tensor unwritten
    verdict = iteration_latency.check_iteration(
        lambda: static, lambda: DEC.reference(inp), [0, 1], (1e-3, 1e-3)
    )
    assert not verdict["correct"] and "unwritten" in verdict["error"]


@pytest.mark.parametrize(
    ("dtype", "copy_in", "norm"),
    [
        ("float32", "pinned", "eager"),
        ("bfloat16", "pinned", "eager"),
        ("float32", "pageable", "eager"),
        ("float32", "pinned", "fused"),  # the fused kernels: RMSNorm and decode attention
        ("bfloat16", "pinned", "fused"),
    ],
)
def test_dynamic_padded_steps_match_float64(dtype, copy_in, norm):
    buckets = (1, 2, 4, 8)
    lengths = [3, 9, 1, 6, 9, 2, 8, 5]
    inp = tiny_inputs(8, 9, dtype, seed=5, lengths=lengths, rows=8)
    gen = torch.Generator().manual_seed(9)
    x_pool = torch.randn(8, TINY.hidden, generator=gen).to(getattr(torch, dtype))
    # a host input: "pinned" goes through the runner's staging buffer (rows 0..n-1 of it)
    runner = DEC.DynamicRunner(inp, buckets, capture=False, norm=norm, copy_in=copy_in)
    ref_inp = {**inp, "x": x_pool}
    # 3 pads row 3 (bucket 4) with a stale input, whose k/v land at row 3's next slot; the later
    # step where row 3 is real must still be right; 5 pads three rows of bucket 8
    for n in (3, 1, 4, 2, 5, 8, 3):
        rows = list(range(n))
        verdict = iteration_latency.check_iteration(
            lambda n=n: runner(x_pool[:n]),
            lambda rows=rows: DEC.reference(DEC.select_rows(ref_inp, rows)),
            rows,
            SPEC.tolerances[dtype],
        )
        assert verdict["correct"], (n, verdict["error"])
        assert verdict["rel_err"] < REL[dtype]
        assert runner(x_pool[:n]).shape == (n, TINY.hidden)


def test_dynamic_pinned_copy_in_stages_through_one_buffer():
    inp = tiny_inputs(4, 5, "float32", rows=4)
    runner = DEC.DynamicRunner(inp, (1, 2, 4), capture=False)
    x = torch.randn(3, TINY.hidden)
    runner(x)
    assert runner.stage.shape == (4, TINY.hidden)
    assert torch.equal(runner.stage[:3], x) and torch.equal(inp["x"][:3], x)
    runner.copy_in = "zero-copy"
    with pytest.raises(ValueError, match="copy_in must be one of"):
        runner(x)


def test_dynamic_runner_rejects_buckets_beyond_the_cache():
    inp = tiny_inputs(4, 5, "float32")
    with pytest.raises(ValueError, match="exceeds"):
        DEC.DynamicRunner(inp, (1, 2, 8), capture=False)


def test_probes_split_each_step_into_stages_that_sum_to_it():
    inp = tiny_inputs(2, 6, "float32")
    probes = iteration_latency.Probes(DEC.STAGES, external=False, device="cpu")
    call = DEC.build("piecewise", inp, 6, capture=False, mark=probes.mark)
    s = iteration_latency.run_iterations(call, steps=20, warmup=2, probes=probes, device="cpu")
    assert list(s.probes) == [*DEC.STAGES, "rest"]
    total = sum(torch.tensor(v, dtype=torch.float64) for v in s.probes.values())
    assert torch.allclose(total, torch.tensor(s.device_ms, dtype=torch.float64), atol=1e-9)


# ---- the spec (profkit capture decode / the counter pass's worker) ----


def test_spec_declares_the_step_and_its_model():
    assert {v.name for v in SPEC.variants} == {"eager", "fused"}
    assert SPEC.variant("eager").baseline and not SPEC.variant("fused").baseline
    assert (1, 512) in SPEC.shapes and any(b == 64 for b, _ in SPEC.shapes)
    assert SPEC.dtypes == ("bfloat16", "float16") and "float32" in SPEC.tolerances
    # bf16 weights of one Llama-2-7B layer (202 M parameters), plus k and v up to the new token
    assert DEC.LAYER.params == 202_383_360
    assert SPEC.bytes_moved((1, 511), 2) == (202_383_360 + 2 * 512 * 4096 + 2 * 4096) * 2


@pytest.mark.parametrize("variant", ["eager", "fused"])
def test_spec_variants_check_through_profkits_check(variant, monkeypatch):
    # profkit.measure.correctness.check (poisoned output, float64 reference) at a tiny layer
    from profkit.measure.correctness import check

    tiny = lambda shape, dtype, device, gen: DEC.make_inputs(shape, dtype, device, gen, TINY)  # noqa: E731
    spec = SPEC.__class__(**{**SPEC.__dict__, "make_inputs": tiny})
    result = check(spec, spec.variant(variant).fn, (2, 7), "float32", "cpu", seed=1)
    assert result.correct, result.error
