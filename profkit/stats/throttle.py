"""Why a case's clocks were low: NVML's throttle bits named, and the low-clock test. Plain
functions on numbers, which the store and explain read; profkit.measure.clocks reads NVML."""

from __future__ import annotations

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
