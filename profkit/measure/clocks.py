"""SM and memory clocks while a case runs, and why they were low (NVML, through nvidia-ml-py).

Read while work is on the GPU (between a graph replay's launch and its synchronize): an idle GPU
drops its clocks within milliseconds, so a reading after the work says nothing. Where NVML is
missing (no nvidia-ml-py, no driver) the columns stay empty and nothing fails.
"""

from __future__ import annotations

import os
from functools import cache

import numpy as np

# NVML clock-event (throttle) reasons that mean the GPU ran slower than it could. Idle and
# application-clock settings are not throttling; names as NVML documents them.
THROTTLE_REASONS = {
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x20: "sw_thermal",
    0x40: "hw_thermal",
    0x80: "hw_power_brake",
}
# A case whose SM clock ran under this share of the GPU's maximum ran throttled. profkit choice:
# the H200 held its 1980 MHz boost under the lab's loads (gpu-facts.md); 10% below is not noise.
LOW_CLOCK_SHARE = 0.9


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


# throttle_reasons holds NVML's names, joined by this
REASON_SEP = ";"


def throttle_reasons(reasons: int) -> list[str]:
    """NVML's names for the throttle bits set in reasons, in THROTTLE_REASONS' order."""
    return [name for bit, name in THROTTLE_REASONS.items() if reasons & bit]


def low_clock(sm_mhz: float, max_sm_mhz: float | None) -> bool:
    return bool(max_sm_mhz) and sm_mhz < LOW_CLOCK_SHARE * max_sm_mhz


def note(sm_mhz: float, reasons: int, max_sm_mhz: float | None) -> str:
    """Empty when the case ran at full clocks; else what held it back."""
    words = throttle_reasons(reasons)
    if low_clock(sm_mhz, max_sm_mhz):
        words.insert(0, f"sm clock {sm_mhz:.0f} of {max_sm_mhz:.0f} MHz")
    return "; ".join(words)
