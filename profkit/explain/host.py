"""Host-bound cases: where the CPU cost of one call exceeds its device time, a Python loop of
these calls runs at the host's pace, whatever the kernel does (issue 7). Schema-1 runs timed no
host cost: nothing host-related is said for them."""

from __future__ import annotations

from collections.abc import Mapping

from profkit.explain.evidence import Evidence, num
from profkit.explain.model import (
    Action,
    Advice,
    Bottleneck,
    Cause,
    Finding,
    FindingKind,
    Reason,
    Unit,
)


def host_finding(row: Mapping, subject: str) -> Finding | None:
    host_us, device_ms = num(row, "host_us"), num(row, "device_p50_ms")
    if host_us is None or device_ms is None or host_us <= device_ms * 1000:
        return None
    ev = Evidence()
    ev.put("host_us", host_us)
    ev.put("device_us", device_ms * 1000)
    ev.put("host_over_device_x", host_us / (device_ms * 1000))
    keys = ["host_us", "device_us", "host_over_device_x"]
    loop_us = num(row, "loop_us")
    if loop_us is not None:
        ev.put("loop_us", loop_us)
        keys.append("loop_us")
    return Finding(
        subject=subject,
        kind=FindingKind.HOST,
        kernel=str(row["kernel"]),
        variant=str(row["variant"]),
        case=str(row.get("case") or "") or None,
        dtype=str(row["dtype"]),
        shape=str(row["shape"]),
        bottleneck=Bottleneck.HOST,
        unit=Unit.HOST,
        reasons=[Reason(Cause.HOST_BOUND, keys)],
        evidence=dict(ev),
        next=[Advice(Action.CUDA_GRAPH, keys, {"host": True})],
    )
