"""examples/gpt_train.py on the CPU at a tiny size: it trains (the loss falls from about ln(vocab))
and prints its steps' time as examples/transformer_block.py does, the line the pace pass is
checked against (jobs/profile_check.py)."""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TINY = ["--steps", "3", "--batch", "2", "--seq", "16", "--dim", "32", "--heads", "2",
        "--layers", "2", "--vocab", "128", "--device", "cpu"]  # fmt: skip


def test_the_gpt_example_trains_and_prints_its_step_clock() -> None:
    done = subprocess.run([sys.executable, "examples/gpt_train.py", *TINY], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.splitlines()
    loss = float(re.fullmatch(r"3 steps in [\d.]+ s, loss ([\d.]+)", first)[1])
    assert 0 < loss < math.log(128) + 0.5  # random tokens: about ln(vocab), not diverging
    assert re.fullmatch(r"last 3 steps: [\d.]+ ms per step", second)
