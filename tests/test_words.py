"""Words read decisions, never make them: a step's heading comes from the closest case's own
outcome (a WIN's closest case is still faster, never "tied")."""

from __future__ import annotations

from stored_runs import explained

from profkit.explain.model import Verdict
from profkit.explain.phrases import next_step_text

SUM = "sum-20261130-235702-vm-d23604"


def test_a_wins_steps_never_say_tied() -> None:
    wins = [v for v in explained(SUM).verdicts if v.verdict == Verdict.WIN and v.next]
    assert wins
    for v in wins:
        for step in v.next:
            assert step.detail["closest"] == "faster" and step.detail["closest_x"] > 1
            text = next_step_text(step)
            assert "tied" not in text and "its closest case (still 1.04x faster than" in text
