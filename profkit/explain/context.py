"""What a diagnosis knows besides the row's counters: the device, who wrote the kernel, the
case's model (bytes, FLOPs, dtype), the steps already ruled out for it, and the other variants of
the same case."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from profkit.explain.kernel_family import Family
from profkit.explain.model import Action, NextStep, Reason
from profkit.explain.record import LaunchRecord
from profkit.explain.roofs import Device
from profkit.explain.siblings import Siblings

Said = tuple[Reason, list[NextStep]]


@dataclass(frozen=True)
class Context:
    device: Device = field(default_factory=Device)
    family: Family = Family.OTHER
    dtype: str = ""
    read_floor: float | None = None  # fewest DRAM bytes read by any variant of the same case
    ruled_out: Mapping[Action, str] = field(default_factory=dict)  # action -> why
    # the other variants of the same case (a run's case only; None for a launch or a report)
    siblings: Siblings | None = field(default=None, compare=False)

    def matmul_like(self, rec: LaunchRecord) -> bool:
        """A matrix product: it issues MMA instructions, or its model is a matmul's (an MxNxK
        shape doing 2MNK FLOPs). High FLOPs per byte alone is no matmul: an elementwise FMA
        chain has it too, and GEMM advice does not fit it."""
        return rec.mma_kind is not None or rec.matmul_shaped
