"""Batch buckets for the decode step's dynamic replay (kernels/decode.py): which captured batch
size serves a step, how much of it is padding, and a batch that changes every step. Pure Python,
no torch; decode.py re-exports every name. The leading underscore keeps the file out of the lab's
spec listing (profkit.spec.lab_files)."""

from __future__ import annotations

import random
from collections.abc import Sequence


def default_buckets(max_batch: int) -> tuple[int, ...]:
    """1, 2, 4, then every multiple of 8 up to max_batch (the sizes vLLM captures by default):
    padding stays under 8 rows past 8, and the graph count grows linearly, not with every batch."""
    if max_batch < 1:
        raise ValueError(f"max_batch must be >= 1, got {max_batch}")
    small = [b for b in (1, 2, 4) if b < max_batch]
    return tuple(sorted({*small, *range(8, max_batch, 8), max_batch}))


def choose_bucket(n: int, buckets: Sequence[int]) -> int:
    """The smallest bucket that holds n rows."""
    if n < 1:
        raise ValueError(f"batch must be >= 1, got {n}")
    for b in sorted(buckets):
        if b >= n:
            return b
    raise ValueError(f"batch {n} exceeds the largest bucket {max(buckets)}")


def padding_waste(n: int, bucket: int) -> float:
    """The fraction of a bucket's rows that are padding."""
    if not 1 <= n <= bucket:
        raise ValueError(f"batch {n} does not fit bucket {bucket}")
    return (bucket - n) / bucket


def batch_walk(steps: int, lo: int, hi: int, seed: int = 0, jump: int = 3) -> list[int]:
    """A batch that changes every step (requests joining and leaving): a seeded random walk in
    [lo, hi] moving by 1..jump rows each step, never standing still."""
    if not 1 <= lo < hi:
        raise ValueError(f"need 1 <= lo < hi, got {lo}, {hi}")
    rng = random.Random(seed)
    n, out = (lo + hi) // 2, []
    for _ in range(steps):
        out.append(n)
        moves = [d for d in range(-jump, jump + 1) if d and lo <= n + d <= hi]
        n += rng.choice(moves)
    return out
