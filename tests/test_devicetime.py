"""Device time's control flow on the CPU, through a fake CUDA that keeps a virtual clock.

The fake executes 'kernels' by advancing the clock (a launch gap, then the kernel), records events
at the clock and, inside `kernel_trace`, each kernel's own start and end, as CUPTI does; it replays
the operations captured inside `graph(...)`. A call that syncs with the host while the stream is
capturing raises, as CUDA does ("operation not permitted when stream is capturing"): that variant
must fall back to events, and the run must say why.
"""

from __future__ import annotations

import contextlib
import types

import pytest

from profkit.measure import case_timing, devicetime, hostcost


class FakeCuda:
    GAP = 0.0006  # ms: a kernel's launch, inside an event window but outside its own timestamps

    def __init__(self) -> None:
        self.clock = 0.0  # ms
        self.capture: list | None = None  # ops recorded while capturing
        self.launches = 0
        self.trace: devicetime.Trace | None = None  # set inside kernel_trace
        self.profiler = True  # False: kernel_trace fails as without CUPTI

    # work on the stream: run now, or record into the graph being captured
    def submit(self, op) -> None:
        if self.capture is not None:
            self.capture.append(op)
        else:
            op()

    def kernel(self, ms: float, name: str = "kernel") -> None:
        self.launches += 1

        def run() -> None:
            self.clock += self.GAP
            if self.trace is not None:
                self.trace.ops.append((self.clock, self.clock + ms, name))
            self.clock += ms

        self.submit(run)

    def is_current_stream_capturing(self) -> bool:
        return self.capture is not None

    # the torch.cuda surface devicetime and hostcost use
    def Event(self, enable_timing: bool = False, external: bool = False):  # noqa: N802
        cuda = self

        class Event:
            t = float("nan")

            def record(self) -> None:
                def stamp() -> None:
                    self.t = cuda.clock

                cuda.submit(stamp)

            def elapsed_time(self, end) -> float:
                return end.t - self.t

        return Event()

    def CUDAGraph(self):  # noqa: N802
        cuda = self

        class Graph:
            ops: list = []

            def replay(self) -> None:
                for op in self.ops:
                    op()

        graph = Graph()
        graph.cuda = cuda
        return graph

    @contextlib.contextmanager
    def graph(self, g):
        self.capture = []
        try:
            yield
        finally:
            g.ops, self.capture = self.capture, None

    def Stream(self):  # noqa: N802
        return types.SimpleNamespace(wait_stream=lambda other: None)

    def current_stream(self):
        return self.Stream()

    @contextlib.contextmanager
    def stream(self, s):
        yield

    def synchronize(self) -> None:
        pass

    def _sleep(self, cycles: int) -> None:
        self.kernel(0.0)


@pytest.fixture
def cuda(monkeypatch: pytest.MonkeyPatch) -> FakeCuda:
    fake = FakeCuda()

    class Buffer:  # the flush buffer: a read of it is one 0.06 ms kernel
        def max(self) -> None:
            fake.kernel(0.06, "flush")

    @contextlib.contextmanager
    def kernel_trace(enabled: bool = True):
        trace = devicetime.Trace()
        if enabled and not fake.profiler:
            trace.error = "profiler unavailable: RuntimeError"
        if enabled and fake.profiler:
            fake.trace = trace
        try:
            yield trace
        finally:
            fake.trace = None

    fake_torch = types.SimpleNamespace(
        cuda=fake, ones=lambda *a, **k: Buffer(), int32="int32", int8="int8"
    )
    monkeypatch.setattr(devicetime, "torch", fake_torch)
    monkeypatch.setattr(devicetime, "kernel_trace", kernel_trace)
    monkeypatch.setattr(devicetime, "USE_SPANS", True)  # the off switch is tested apart
    monkeypatch.setattr(devicetime.Flush, "_names", {})
    monkeypatch.setattr(hostcost, "torch", fake_torch)
    return fake


def test_a_capturable_call_is_timed_by_graph_replay(cuda: FakeCuda) -> None:
    t = devicetime.measure(lambda: cuda.kernel(0.005))
    s = t.summary()
    assert (s["device_method"], s["device_note"]) == ("graph", "")
    assert s["device_clock"] == devicetime.SPANS
    assert s["device_p50_ms"] == pytest.approx(0.005)  # the kernel's own time, not its launch
    assert s["device_launch_us"] == pytest.approx(FakeCuda.GAP * 1e3)  # the launch, apart
    assert s["device_reps"] == devicetime.MAX_SAMPLES  # 150 ms / 5 us, capped
    assert s["device_overhead_us"] == pytest.approx(0.0)


def test_a_call_of_several_kernels_spans_its_first_start_to_its_last_end(cuda: FakeCuda) -> None:
    def two() -> None:
        cuda.kernel(0.002, "a")
        cuda.kernel(0.003, "b")

    s = devicetime.measure(two).summary()
    assert s["device_p50_ms"] == pytest.approx(0.002 + FakeCuda.GAP + 0.003)  # the gap inside


def test_without_kernel_timestamps_event_windows_are_used_and_the_run_says_so(
    cuda: FakeCuda,
) -> None:
    cuda.profiler = False
    s = devicetime.measure(lambda: cuda.kernel(0.005)).summary()
    assert (s["device_method"], s["device_clock"]) == ("graph", devicetime.EVENTS)
    assert s["device_note"].startswith("kernel timestamps unusable (profiler unavailable")
    assert s["device_p50_ms"] == pytest.approx(0.005 + FakeCuda.GAP)  # the launch is inside
    assert s["device_launch_us"] is None


def test_call_spans_refuses_a_trace_that_does_not_split_into_the_calls() -> None:
    ops = [(0.0, 1.0, "flush"), (1.0, 2.0, "flush"), (2.5, 3.0, "k"), (3.1, 3.2, "k2")]
    assert devicetime.call_spans(ops, ["flush"], 1) == (pytest.approx([0.7]), "")
    assert devicetime.call_spans(ops, ["flush"], 3)[0] is None  # 4 ops are not 3 calls
    assert devicetime.call_spans(ops[:2], ["flush"], 1)[1] == "the call launched no GPU work"
    swapped = [ops[0], ops[2], ops[1], ops[3]]
    assert devicetime.call_spans(swapped, ["flush"], 1) == (
        None,
        "the trace's order is not flush, call",
    )
    assert devicetime.call_spans([], ["flush"], 1)[0] is None


def test_a_capture_unsafe_call_falls_back_to_events_and_says_why(cuda: FakeCuda) -> None:
    def syncs_with_the_host() -> None:
        if cuda.is_current_stream_capturing():
            raise RuntimeError("CUDA error: operation not permitted when stream is capturing")
        cuda.kernel(0.007)

    s = devicetime.measure(syncs_with_the_host).summary()
    assert (s["device_method"], s["device_clock"]) == ("events", devicetime.SPANS)
    assert s["device_note"].startswith("graph capture failed (RuntimeError: CUDA error: operation")
    assert s["device_p50_ms"] == pytest.approx(0.007)  # the spin kernel is no call's
    cuda.profiler = False
    s = devicetime.measure(syncs_with_the_host).summary()
    assert s["device_clock"] == devicetime.EVENTS
    assert s["device_p50_ms"] == pytest.approx(0.007 + FakeCuda.GAP)
    assert "; kernel timestamps unusable" in s["device_note"]


def test_the_flush_precedes_every_call_unless_warm_l2(cuda: FakeCuda) -> None:
    devicetime.measure(lambda: cuda.kernel(1.0))  # 150 samples of 1 ms
    cold = cuda.launches
    cuda.launches = 0
    devicetime.measure(lambda: cuda.kernel(1.0), warm_l2=True)
    assert cuda.launches < cold / 1.5  # no flush kernels: fewer launches for the same samples


def test_measure_call_reports_the_three_figures(cuda: FakeCuda) -> None:
    t = case_timing.measure_call(lambda: cuda.kernel(0.002))
    cols = t.columns
    assert {"device_p50_ms", "device_p95_ms", "host_us", "loop_us"} <= set(cols)
    assert cols["host_us"] > 0 and cols["loop_us"] > 0
    kinds = {kind for kind, _ in t.samples}
    assert kinds == {"device", "host", "loop"}
    assert sum(kind == "device" for kind, _ in t.samples) == cols["device_reps"]


def test_samples_pool_rounds_of_separate_graphs_over_fresh_inputs(cuda: FakeCuda) -> None:
    """A per-capture offset (where the inputs sit) becomes spread across rounds, not a bias of
    the whole run: each round is its own graph over a call fresh() made."""
    captures, made = [], []
    graph = cuda.graph

    def counting_graph(g):
        captures.append(g)
        return graph(g)

    cuda.graph = counting_graph

    def fresh():
        ms = [0.004, 0.005, 0.006][len(made)]  # each placement runs at its own speed
        made.append(ms)
        return lambda: cuda.kernel(ms)

    s = devicetime.measure(lambda: cuda.kernel(0.003), fresh=fresh).summary()
    assert len(captures) == devicetime.ROUNDS and len(made) == devicetime.ROUNDS - 1
    assert s["device_reps"] == devicetime.MAX_SAMPLES  # the same sample count, split over rounds
    assert s["device_p5_ms"] == pytest.approx(0.003) and s["device_p95_ms"] == pytest.approx(0.006)


def test_after_a_failed_capture_later_rounds_do_not_retry_the_graph(cuda: FakeCuda) -> None:
    tries = []

    def syncs_with_the_host() -> None:
        if cuda.is_current_stream_capturing():
            tries.append(1)
            raise RuntimeError("operation not permitted when stream is capturing")
        cuda.kernel(0.007)

    s = devicetime.measure(syncs_with_the_host, fresh=lambda: syncs_with_the_host).summary()
    assert len(tries) == 1 and s["device_method"] == "events"
    assert s["device_note"].startswith("graph capture failed")


def test_spans_are_off_by_default_and_then_leave_no_note(
    cuda: FakeCuda, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(devicetime, "USE_SPANS", False)
    s = devicetime.measure(lambda: cuda.kernel(0.005)).summary()
    assert (s["device_clock"], s["device_note"]) == (devicetime.EVENTS, "")
    assert s["device_p50_ms"] == pytest.approx(0.005 + FakeCuda.GAP)
