"""profkit.stats on synthetic samples whose answer is known."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest

from profkit import stats

RNG = np.random.default_rng(1234)


def lognormal(median: float, sigma: float, n: int) -> np.ndarray:
    return median * np.exp(RNG.normal(0.0, sigma, n))


def test_identical_distributions_are_noise() -> None:
    for _ in range(5):
        c = stats.compare_samples(lognormal(0.1, 0.02, 300), lognormal(0.1, 0.02, 300))
        assert c.outcome == "noise"
        assert c.ci_low <= 1.0 <= c.ci_high


def test_a_three_percent_shift_with_a_tight_spread_is_significant() -> None:
    c = stats.compare_samples(lognormal(0.103, 0.005, 300), lognormal(0.100, 0.005, 300))
    assert c.outcome == "slower"
    assert c.ratio == pytest.approx(1.03, abs=0.003)
    assert 1.0 < c.ci_low < c.ratio < c.ci_high
    faster = stats.compare_samples(lognormal(0.097, 0.005, 300), lognormal(0.100, 0.005, 300))
    assert faster.outcome == "faster" and faster.delta_pct == pytest.approx(-3.0, abs=0.4)


def test_a_shift_under_the_practical_floor_is_noise_even_when_significant() -> None:
    c = stats.compare_samples(lognormal(0.101, 0.001, 1000), lognormal(0.100, 0.001, 1000))
    assert c.ci_low > 1.0  # the interval says real ...
    assert c.outcome == "noise"  # ... but 1% is under the stated floor


def test_a_bimodal_distribution_is_flagged_unstable() -> None:
    bimodal = np.concatenate([lognormal(0.05, 0.01, 150), lognormal(0.15, 0.01, 150)])
    c = stats.compare_samples(bimodal, lognormal(0.1, 0.01, 300))
    assert c.outcome == "unstable"
    assert c.ci_high / c.ci_low - 1 > stats.UNSTABLE_WIDTH


def test_bootstrap_is_deterministic_and_cheap() -> None:
    a, b = lognormal(0.1, 0.05, 5000), lognormal(0.11, 0.05, 5000)
    t0 = time.perf_counter()
    first = stats.compare_samples(a, b)
    assert time.perf_counter() - t0 < 0.5  # order statistics, not resampled arrays
    assert stats.compare_samples(a, b) == first
    assert first.n_a == first.n_b == 5000


@pytest.mark.parametrize("n", [7, 8, 51, 200])
def test_resampled_medians_match_plain_resampling(n: int) -> None:
    """The order-statistic draw has the distribution of medians of real resamples."""
    x = lognormal(1.0, 0.3, n)
    rng = np.random.default_rng(5)
    direct = stats.resampled_medians(x, 20000, rng)
    plain = np.median(x[rng.integers(0, n, (20000, n))], axis=1)
    for q in (5, 25, 50, 75, 95):
        assert np.percentile(direct, q) == pytest.approx(np.percentile(plain, q), rel=0.02)


def test_constant_samples_give_a_point_interval() -> None:
    c = stats.compare_samples(np.full(10, 2.0), np.full(10, 1.0))
    assert (c.ratio, c.ci_low, c.ci_high, c.outcome) == (2.0, 2.0, 2.0, "slower")


def test_summaries_approximate_the_bootstrap() -> None:
    a, b = lognormal(0.103, 0.01, 400), lognormal(0.100, 0.01, 400)
    boot = stats.compare_samples(a, b)
    q = lambda x: (np.median(x), np.subtract(*np.percentile(x, [75, 25])), len(x))  # noqa: E731
    approx = stats.compare_summaries(*q(a), *q(b))
    assert approx.method == "normal approximation" and approx.outcome == boot.outcome
    assert approx.ci_low == pytest.approx(boot.ci_low, rel=0.01)
    assert approx.ci_high == pytest.approx(boot.ci_high, rel=0.01)


def test_compare_cases_uses_samples_when_both_sides_have_them() -> None:
    a, b = lognormal(0.2, 0.005, 200), lognormal(0.1, 0.005, 200)
    samples = pd.DataFrame(
        {"case": ["a"] * 200 + ["b"] * 200, "kind": "device", "ms": np.concatenate([a, b])}
    )
    rows = [{"case": c, "device_p50_ms": 9.9, "device_iqr_ms": 9.9, "device_reps": 3} for c in "ab"]
    c = stats.compare_cases(rows[0], rows[1], samples)
    assert c.from_samples and c.method == "bootstrap" and c.ratio == pytest.approx(2.0, rel=0.02)
    # without samples (a schema-1 run) the stored summaries decide
    old = stats.compare_cases(
        {"case": "a", "device_p50_ms": 0.2, "device_iqr_ms": 0.001, "device_reps": 100},
        {"case": "b", "device_p50_ms": 0.1, "device_iqr_ms": 0.001, "device_reps": 100},
    )
    assert not old.from_samples and old.method == "normal approximation" and old.outcome == "slower"
    assert old.ratio == pytest.approx(2.0)


def test_wide_spread_from_few_repetitions_is_unstable_not_a_tie() -> None:
    # issue 7: a 195% gap once hid inside a spread; with an interval it is either real or unstable
    c = stats.compare_summaries(0.0295, 0.012, 30, 0.0100, 0.0002, 30)
    assert c.outcome in ("slower", "unstable") and c.outcome != "noise"


def test_a_gap_under_the_microsecond_floor_is_noise_at_small_shapes() -> None:
    # 3.5 us against 3.0 us: 17% and a tight interval, but under the run-to-run floor of 1 us
    c = stats.compare_samples(lognormal(0.0035, 0.01, 500), lognormal(0.0030, 0.01, 500))
    assert c.ci_low > 1.1 and c.outcome == "noise"
    # the same 17% at 30 us is real
    big = stats.compare_samples(lognormal(0.035, 0.01, 500), lognormal(0.030, 0.01, 500))
    assert big.outcome == "slower"
