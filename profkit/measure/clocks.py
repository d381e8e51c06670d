"""SM and memory clocks while a case runs, and why they were low (NVML, through nvidia-ml-py).

Read while work is on the GPU (between a graph replay's launch and its synchronize): an idle GPU
drops its clocks within milliseconds, so a reading after the work says nothing. Where NVML is
missing (no nvidia-ml-py, no driver) the columns stay empty and nothing fails.
"""

from __future__ import annotations

import os
from functools import cache

import numpy as np

from profkit.stats.throttle import REASON_SEP, low_clock, note, throttle_reasons


@cache
def _nvml():
    try:
        import pynvml

        pynvml.nvmlInit()
        visible = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0].strip()
        index = int(visible) if visible.isdigit() else 0
        return pynvml, pynvml.nvmlDeviceGetHandleByIndex(index)
    except Exception:  # no nvidia-ml-py, no driver, or a UUID we do not map: no clock readings
        return None


def max_sm_clock_mhz() -> float | None:
    nv = _nvml()
    if nv is None:
        return None
    pynvml, handle = nv
    try:
        return float(pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM))
    except Exception:
        return None


class Probe:
    """Collects clock readings; `summary` gives the case's columns."""

    def __init__(self) -> None:
        self.sm: list[float] = []
        self.mem: list[float] = []
        self.reasons = 0

    def read(self) -> None:
        nv = _nvml()
        if nv is None:
            return
        pynvml, handle = nv
        try:
            self.sm.append(pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM))
            self.mem.append(pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_MEM))
            # NVML renamed "throttle reasons" to "clocks event reasons"; take whichever exists
            get = (
                getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
                or pynvml.nvmlDeviceGetCurrentClocksThrottleReasons
            )
            self.reasons |= int(get(handle))
        except Exception:
            return

    def summary(self) -> dict:
        if not self.sm:
            return {}
        sm, top = float(np.median(self.sm)), max_sm_clock_mhz()
        names = throttle_reasons(self.reasons)
        return {
            "sm_clock_mhz": sm,
            "mem_clock_mhz": float(np.median(self.mem)),
            "clock_note": note(sm, self.reasons, top),
            # what code reads; clock_note says the same in words
            "clock_throttled": bool(names) or low_clock(sm, top),
            "throttle_reasons": REASON_SEP.join(names),
        }
