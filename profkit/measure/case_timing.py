"""A correct case's three timings, each named for what it measures.

`devicetime` measures the GPU time of one call, `hostcost` what the CPU spends launching it and
what an eager Python loop sustains. Only a variant that passed profkit.measure.correctness is timed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch

from profkit.spec import KernelSpec, Shape, Variant


def resolve_callable(variant: Variant, cache: dict[str, Callable]) -> Callable[[dict], Any]:
    """The variant's callable, running its `prepare` (e.g. torch.compile) once per process."""
    if variant.prepare is None:
        return variant.fn
    if variant.name not in cache:
        cache[variant.name] = variant.prepare()
    return cache[variant.name]


@contextlib.contextmanager
def nvtx_range(name: str) -> Iterator[None]:
    """A push/pop range in profkit's own NVTX domain (ncu filter: regex:profkit@.+/)."""
    import nvtx

    with nvtx.annotate(name, domain="profkit"):
        yield


@dataclass
class CaseTiming:
    """A case's three figures: its summary columns, and every raw sample (kind, ms)."""

    columns: dict
    samples: list[tuple[str, float]]


def measure_call(
    fn: Callable[[], Any],
    *,
    warm_l2: bool = False,
    fresh: Callable[[], Callable[[], Any]] | None = None,
) -> CaseTiming:
    """Device time (graph replay, L2 flushed unless warm_l2; later rounds on fresh() calls when
    given), host cost and eager-loop time."""
    from profkit.measure import devicetime, hostcost

    device = devicetime.measure(fn, warm_l2=warm_l2, fresh=fresh)
    columns = device.summary()
    host = hostcost.host_cost_us(fn)
    host_us = hostcost.median(host)
    loop = hostcost.loop_us(fn, columns["device_p50_ms"], host_us)
    columns.update(host_us=host_us, loop_us=hostcost.median(loop))
    samples = [("device", ms) for ms in device.samples_ms]
    samples += [("host", us / 1e3) for us in host] + [("loop", us / 1e3) for us in loop]
    return CaseTiming(columns, samples)


def time_case(
    spec: KernelSpec, fn: Callable, shape: Shape, dtype: str, seed: int, warm_l2: bool = False
) -> CaseTiming:
    gen = torch.Generator(device="cuda").manual_seed(seed)
    held = []  # every round's inputs stay allocated, so each round's sit at new addresses

    def fresh() -> Callable[[], Any]:
        held.append(spec.make_inputs(shape, dtype, "cuda", gen))
        inputs = held[-1]
        return lambda: fn(inputs)

    return measure_call(fresh(), warm_l2=warm_l2, fresh=fresh)


def copy_gbps(nbytes: int, cache: dict[int, float]) -> float:
    """GB/s of a device copy moving the same bytes as the case (read + write), measured once per
    size: the DRAM roof depends on the size (a 128 MB copy reaches ~85% of a 1 GiB one's rate)."""
    if nbytes not in cache:
        from profkit.measure import devicetime

        cache[nbytes] = devicetime.measure_copy(max(nbytes // 2, 1))["gbps"]
    return cache[nbytes]
