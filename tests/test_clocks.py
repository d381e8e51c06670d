"""profkit.measure.clocks: a case's clock columns from NVML's readings (a fake pynvml: no GPU here),
the note in words and the fields code reads, which must agree."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from profkit.measure import clocks

MAX_SM = 1980.0


def fake_nvml(sm: float, reasons: int) -> SimpleNamespace:
    return SimpleNamespace(
        NVML_CLOCK_SM=0,
        NVML_CLOCK_MEM=1,
        nvmlDeviceGetClockInfo=lambda handle, which: sm if which == 0 else 2619.0,
        nvmlDeviceGetMaxClockInfo=lambda handle, which: MAX_SM,
        nvmlDeviceGetCurrentClocksEventReasons=lambda handle: reasons,
    )


@pytest.mark.parametrize(
    ("sm", "reasons", "note", "throttled", "names"),
    [
        (1980.0, 0, "", False, ""),
        (1980.0, 0x1, "", False, ""),  # idle is not throttling
        (1980.0, 0x4, "sw_power_cap", True, "sw_power_cap"),
        (1410.0, 0, "sm clock 1410 of 1980 MHz", True, ""),
        (1410.0, 0x4 | 0x40, "sm clock 1410 of 1980 MHz; sw_power_cap; hw_thermal", True,
         "sw_power_cap;hw_thermal"),
    ],
)  # fmt: skip
def test_summary_says_in_fields_what_the_note_says_in_words(
    monkeypatch: pytest.MonkeyPatch, sm: float, reasons: int, note: str, throttled: bool, names: str
) -> None:
    monkeypatch.setattr(clocks, "_nvml", lambda: (fake_nvml(sm, reasons), "handle"))
    probe = clocks.Probe()
    probe.read()
    s = probe.summary()
    assert (s["sm_clock_mhz"], s["mem_clock_mhz"]) == (sm, 2619.0)
    got = (s["clock_note"], s["clock_throttled"], s["throttle_reasons"])
    assert got == (note, throttled, names)


def test_without_nvml_no_clock_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(clocks, "_nvml", lambda: None)
    probe = clocks.Probe()
    probe.read()
    assert probe.summary() == {}
