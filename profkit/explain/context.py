"""What a diagnosis knows besides the record (which holds the counters, the model, and who wrote
the kernel and what kind it is): the device, the case's dtype and read floor, the steps already
ruled out for it, and the other variants of the same case."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from profkit.explain.model import Action, Advice, Reason
from profkit.explain.roofs import Device
from profkit.explain.siblings import Siblings

Said = tuple[Reason, list[Advice]]


@dataclass(frozen=True)
class Context:
    device: Device = field(default_factory=Device)
    dtype: str = ""
    read_floor: float | None = None  # fewest DRAM bytes read by any variant of the same case
    ruled_out: Mapping[Action, str] = field(default_factory=dict)  # action -> why
    # the other variants of the same case (a run's case only; None for a launch or a report)
    siblings: Siblings | None = field(default=None, compare=False)
