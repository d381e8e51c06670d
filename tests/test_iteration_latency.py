"""profkit.measure.iteration_latency: percentiles, the tail's attribution, probes and the loop on
the host clock (synthetic samples with known answers: constructed here, not measured)."""

import gc

import numpy as np
import pytest

from profkit.measure import iteration_latency
from profkit.stats import tail


def test_percentiles_of_1_to_1001_are_exact():
    p = tail.percentiles(np.arange(1, 1002))
    assert p == {"n": 1001, "p5": 51, "p25": 251, "p50": 501, "p75": 751, "p95": 951, "p99": 991}
    assert tail.tail_ratio(np.arange(1, 1002)) == pytest.approx(951 / 501)


def test_step_columns_have_their_own_names_never_device_time():
    cols = tail.iteration_columns(np.arange(1, 1002) / 1000)
    assert not any(c.startswith("device_") for c in cols)
    assert cols["step_reps"] == 1001
    assert cols["step_p50_ms"] == pytest.approx(0.501)
    assert cols["step_p95_ms"] == pytest.approx(0.951)
    assert cols["step_p99_ms"] == pytest.approx(0.991)
    assert cols["step_p5_ms"] == pytest.approx(0.051)
    assert cols["step_iqr_ms"] == pytest.approx(0.5)
    assert cols["step_p95_over_p50"] == pytest.approx(951 / 501)


def test_a_flat_distribution_has_tail_ratio_one_and_a_spiky_one_more():
    assert tail.tail_ratio(np.full(1000, 0.2)) == 1.0
    x = np.full(1000, 1.0)
    x[:100] = 2.0  # 10% of steps twice as long: p95 falls among them
    assert tail.tail_ratio(x) == 2.0


def test_no_samples_is_an_error():
    with pytest.raises(ValueError):
        tail.percentiles([])


def spiky(n=1000, spikes=50):
    """Stage a constant 1.0 ms, stage b 0.5 ms except `spikes` steps at 2.5 ms."""
    a = np.full(n, 1.0)
    b = np.full(n, 0.5)
    b[::20][:spikes] = 2.5
    return a, b


def test_attribute_tail_names_the_stage_that_spikes():
    a, b = spiky()
    device = a + b
    assert tail.tail_iterations(device).sum() == 50
    ranked = tail.attribute_tail(device, {"a": a, "b": b})
    assert ranked == [("b", pytest.approx(2.0)), ("a", pytest.approx(0.0))]


def test_attribute_tail_rejects_mismatched_stages():
    with pytest.raises(ValueError, match="samples"):
        tail.attribute_tail(np.ones(10), {"a": np.ones(9)})


def test_tail_by_bucket_shows_which_bucket_holds_the_tail():
    a, b = spiky()
    device = a + b
    labels = np.where(b > 1.0, 32, 8)  # every spike at bucket 32
    labels[1::20] = 32  # and as many ordinary steps there
    by = tail.tail_by(device, labels).set_index("label")
    assert by.loc[32, "tail_share"] == 1.0 and by.loc[8, "tail_share"] == 0.0
    assert by.loc[32, "step_share"] == pytest.approx(0.1)
    assert by.loc[8, "p50_ms"] == 1.5 and by.loc[8, "p95_over_p50"] == 1.0


def test_probes_read_stage_times_that_telescope_to_the_step():
    start, end = iteration_latency.HostEvent(), iteration_latency.HostEvent()
    probes = iteration_latency.Probes(["x", "y"], external=False, device="cpu")
    start.t, end.t = 1.0, 1.010
    probes.events["x"].t, probes.events["y"].t = 1.002, 1.009
    got = probes.read(start, end)
    assert got == pytest.approx({"x": 2.0, "y": 7.0, "rest": 1.0})
    assert sum(got.values()) == pytest.approx(start.elapsed_time(end))


def test_run_steps_times_every_step_after_the_warmup():
    calls = []
    s = iteration_latency.run_iterations(calls.append, steps=30, warmup=4, device="cpu")
    assert calls == [0, 1, 2, 3, *range(30)]
    assert s.device_ms.shape == s.host_ms.shape == (30,)
    assert (s.device_ms >= s.host_ms).all() and s.loop_ms > 0


def test_samples_frame_is_profkits_long_format():
    s = iteration_latency.IterationSamples(
        np.array([1.0, 2.0]), np.array([0.1, 0.2]), 1.5, {"qkv": [0.3, 0.4]}
    )
    df = iteration_latency.samples_frame("decode.graph.bfloat16.1x512", s)
    assert list(df.columns) == ["case", "kind", "ms"]
    assert df.groupby("kind").ms.apply(list).to_dict() == {
        "device": [1.0, 2.0],
        "host": [0.1, 0.2],
        "probe.qkv": [0.3, 0.4],
    }
    row = iteration_latency.case_row(
        {"case": "c"},
        iteration_latency.IterationSamples(np.arange(1, 1002) / 1e3, np.full(1001, 0.02), 0.6),
    )
    assert row["host_us"] == pytest.approx(20.0) and row["loop_us"] == pytest.approx(600.0)
    assert row["step_method"] == "events" and row["step_p50_ms"] == pytest.approx(0.501)
    assert "device_p50_ms" not in row  # no single call's device time is measured


def test_run_steps_keeps_garbage_collection_out_of_the_timed_steps():
    seen = []
    s = iteration_latency.run_iterations(
        lambda i: seen.append(gc.isenabled()), steps=10, warmup=2, device="cpu"
    )
    assert len(s.device_ms) == 10
    assert seen[:2] == [True, True]  # the warm-up runs as the caller's process does
    assert not any(seen[2:])  # every timed step ran with the collector off
    assert gc.isenabled()  # and it is back on afterwards


def test_run_steps_restores_the_collector_when_a_step_raises():
    def boom(i):
        if i == 1:
            raise RuntimeError("step failed")

    with pytest.raises(RuntimeError):
        iteration_latency.run_iterations(boom, steps=5, warmup=0, device="cpu")
    assert gc.isenabled()
