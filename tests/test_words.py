"""Words read decisions, never make them: a step's heading comes from the closest case's own
outcome (a WIN's closest case is still faster, never "tied")."""

from __future__ import annotations

from stored_runs import explained

from profkit.explain.model import Advice, Cause, Reason, Verdict
from profkit.explain.phrases import (
    ADVICE_TEXT,
    REASON_WORDS,
    STEP_WORDS,
    advice_text,
    reason_text,
)

SUM = "sum-20261130-235702-vm-d23604"


def test_a_wins_steps_never_say_tied() -> None:
    wins = [v for v in explained(SUM).verdicts if v.verdict == Verdict.WIN and v.next]
    assert wins
    for v in wins:
        for step in v.next:
            assert step.detail["closest"] == "faster" and step.detail["closest_x"] > 1
            text = advice_text(step)
            assert "tied" not in text and "its closest case (still 1.04x faster than" in text


def test_every_cause_has_words_and_the_first_matching_row_wins() -> None:
    assert {w.cause for w in REASON_WORDS} == set(Cause)
    ev = {"tensor_any_pct": 30.0, "pct_of_pipe_roof_pct": 20.0, "pipe_roof_tflops": 989.0,
          "roof_clock_mhz": 1755.0}  # fmt: skip
    roof = reason_text(Reason(Cause.TENSOR_UNDERFED, ["tensor_any_pct"]), ev)
    assert roof.startswith("A matmul on the Tensor Cores at only 20.0% of their")
    # the busy flag's row comes first, whatever the evidence holds
    busy = reason_text(Reason(Cause.TENSOR_UNDERFED, ["tensor_any_pct"], {"busy": True}), ev)
    assert busy.startswith("A matmul whose Tensor Cores are busy only 30.0%")
    # a row whose evidence is missing gives way to the next
    bare = reason_text(Reason(Cause.AT_ROOF), {"dram_throughput_pct": 91.0})
    assert bare.startswith("DRAM runs at 91.0% of peak")


def test_the_dominant_stall_has_one_denominator() -> None:
    # the record's sum (every captured reason but not_selected and selected) is the one both the
    # stall cause and its share are read from: "sleeping" counts, as it did in the record's
    from profkit.explain import catalogue
    from profkit.explain.evidence import Evidence
    from profkit.explain.kinds import KernelKind
    from profkit.explain.record import LaunchRecord

    rec = LaunchRecord(stalls={"barrier": 30.0, "sleeping": 30.0, "wait": 40.0,
                               "not_selected": 50.0})  # fmt: skip
    ev = Evidence()
    said = catalogue.said(catalogue.evaluate(rec), Cause.STALL, KernelKind.ANY, ev)
    reason, _ = said
    assert reason.detail["stall"] == "wait" and ev["stall_share_pct"] == 40.0
    assert rec.dominant_stall == ("wait", 40.0, 0.4)
    assert rec.captured_stall_share("barrier") == rec.stall_share("barrier") == 0.3
    assert rec.captured_stall_share("membar") is None


def test_every_step_words_row_is_reached_by_its_own_detail() -> None:
    """STEP_WORDS is first-match: a row an earlier row of its action always shadows would never
    be said. Each row whose condition is keys gets its own words from a detail holding just
    those keys (and the names its words read), never an earlier row's or the plain text."""
    for row in STEP_WORDS:
        if callable(row.when):
            continue
        d = {k: True for k in row.when} | {"library": "liger", "sibling": "triton", "pipe": "fma"}
        said = advice_text(Advice(row.action, detail=d))
        assert said == (row.words if isinstance(row.words, str) else row.words(d)), row
        if row.when:
            assert said != ADVICE_TEXT[row.action], row
