"""Is one timing really different from another? A 95% confidence interval of the ratio of medians.

With raw samples (schema 2 runs store them) the interval comes from a percentile bootstrap over
both sets (independent samples, fixed seed so the same run always gives the same answer). The
median of a resample is drawn directly rather than by resampling: sorting n draws from the
empirical distribution is the same as mapping n sorted uniforms through its quantile function, and
the median's order statistic of n uniforms is Beta-distributed. That is the same bootstrap
distribution, exactly, at a thousandth of the cost of resampling whole arrays.

Runs stored before samples were kept (schema 1) have only percentiles: the interval then comes
from the normal approximation of each median's standard error, derived from the inter-quartile
range, and says so (`from_samples` false).

A difference is called only when the interval excludes 1 AND the gap is at least a practical floor
(a share of the time, and an absolute floor in microseconds); an interval wider than
UNSTABLE_WIDTH is "unstable" (e.g. a bimodal distribution), never a tie.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
import pandas as pd

# the practical floors are thresholds (profkit.thresholds imports nothing)
from profkit.thresholds import PRACTICAL_FLOOR_PCT, PRACTICAL_FLOOR_US

CONFIDENCE = 0.95
N_RESAMPLES = 2000
SEED = 0
# An interval wider than this (ci_high / ci_low - 1) cannot tell a 10% change from none: the case is
# "unstable" (bimodal, throttling, host interference), never quietly a tie. profkit choice: 20%.
UNSTABLE_WIDTH = 0.20
# IQR of a normal distribution in standard deviations, and the asymptotic standard error of a
# median in standard deviations times 1/sqrt(n): sqrt(pi/2).
_IQR_SIGMAS = 1.349
_MEDIAN_SE = math.sqrt(math.pi / 2)

OUTCOMES = ("faster", "slower", "noise", "unstable")
# how an interval was computed, as outputs name it (MedianRatio.method)
BOOTSTRAP, NORMAL_APPROXIMATION = "bootstrap", "normal approximation"


@dataclass(frozen=True)
class MedianRatio:
    """a against b: ratio = median(a) / median(b); "faster" means a is faster than b."""

    ratio: float
    ci_low: float
    ci_high: float
    outcome: str
    from_samples: bool  # a bootstrap over raw samples; else the normal approximation
    n_a: int
    n_b: int

    @property
    def method(self) -> str:
        return BOOTSTRAP if self.from_samples else NORMAL_APPROXIMATION

    @property
    def delta_pct(self) -> float:
        return (self.ratio - 1.0) * 100.0

    def as_dict(self) -> dict:
        return {
            "ratio": self.ratio,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "outcome": self.outcome,
            "method": self.method,
            "n_a": self.n_a,
            "n_b": self.n_b,
        }


def decide(ratio: float, ci_low: float, ci_high: float, b_ms: float | None = None) -> str:
    """The outcome of a against b from the ratio's interval; b_ms (b's median) sets the absolute
    size of the gap for the microsecond floor."""
    if not all(map(math.isfinite, (ratio, ci_low, ci_high))) or ci_low <= 0:
        return "unstable"
    if ci_high / ci_low - 1.0 > UNSTABLE_WIDTH:
        return "unstable"
    if ci_low <= 1.0 <= ci_high or abs(ratio - 1.0) * 100.0 < PRACTICAL_FLOOR_PCT:
        return "noise"
    if b_ms is not None and abs(ratio - 1.0) * b_ms * 1e3 < PRACTICAL_FLOOR_US:
        return "noise"
    return "faster" if ratio < 1.0 else "slower"


def resampled_medians(x: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """The medians of n_resamples bootstrap resamples of x, drawn through their order statistics:
    the k-th smallest of n uniforms is Beta(k, n - k + 1); for an even n the next one above it is
    u + (1 - u) * Beta(1, n - k), the smallest of the n - k uniforms left above u."""
    x = np.sort(x)
    n = len(x)

    def at(u: np.ndarray) -> np.ndarray:  # the empirical quantile function
        return x[np.minimum((u * n).astype(int), n - 1)]

    k = (n + 1) // 2 if n % 2 else n // 2
    low = rng.beta(k, n - k + 1, n_resamples)
    if n % 2:
        return at(low)
    high = low + (1 - low) * rng.beta(1, n - k, n_resamples)
    return (at(low) + at(high)) / 2


def compare_samples(a_ms: np.ndarray, b_ms: np.ndarray) -> MedianRatio:
    """Bootstrap CI of median(a) / median(b) from two independent sets of samples."""
    a, b = (np.asarray(v, float) for v in (a_ms, b_ms))
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    if len(a) < 2 or len(b) < 2:
        raise ValueError("a comparison needs at least two samples on each side")
    ratio = float(np.median(a) / np.median(b))
    rng = np.random.default_rng(SEED)
    ratios = resampled_medians(a, N_RESAMPLES, rng) / resampled_medians(b, N_RESAMPLES, rng)
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = (float(v) for v in np.percentile(ratios, [tail, 100 - tail]))
    outcome = decide(ratio, low, high, float(np.median(b)))
    return MedianRatio(ratio, low, high, outcome, True, len(a), len(b))


def compare_summaries(
    a_p50: float, a_iqr: float, n_a: int, b_p50: float, b_iqr: float, n_b: int
) -> MedianRatio:
    """The same interval from medians, IQRs and counts alone (runs without samples): each median's
    standard error is sqrt(pi/2) * (IQR / 1.349) / sqrt(n), combined on the log scale."""
    z = _z()
    rel_var = 0.0
    for p50, iqr, n in ((a_p50, a_iqr, n_a), (b_p50, b_iqr, n_b)):
        se = _MEDIAN_SE * (iqr / _IQR_SIGMAS) / math.sqrt(max(n, 1))
        rel_var += (se / p50) ** 2
    ratio = a_p50 / b_p50
    half = z * math.sqrt(rel_var)
    low, high = ratio * math.exp(-half), ratio * math.exp(half)
    outcome = decide(ratio, low, high, b_p50)
    return MedianRatio(ratio, low, high, outcome, False, int(n_a), int(n_b))


def _z() -> float:
    return NormalDist().inv_cdf(0.5 + CONFIDENCE / 2)


def case_samples(samples: pd.DataFrame | None, case: str, kind: str = "device") -> np.ndarray:
    """One case's raw samples of one kind (empty when the run stored none)."""
    if samples is None or samples.empty:
        return np.empty(0)
    return _split(samples).get((case, kind), np.empty(0))


# samples table (by identity) -> its samples per (case, kind): explain and the dashboard compare
# hundreds of case pairs of one run, and a scan of a decode run's 400k samples per pair cost 4 ms
_SPLITS: dict[int, tuple[weakref.ref, int, dict[tuple[str, str], np.ndarray]]] = {}


def _split(samples: pd.DataFrame) -> dict[tuple[str, str], np.ndarray]:
    key = id(samples)
    hit = _SPLITS.get(key)
    if hit is not None and hit[0]() is samples and hit[1] == len(samples):
        return hit[2]
    ms = samples["ms"].to_numpy(float)
    groups = samples.groupby([samples["case"].astype(str), samples["kind"].astype(str)], sort=False)
    split = {k: ms[i] for k, i in groups.indices.items()}
    # the entry goes with its table: a later table at the same address never reads it
    _SPLITS[key] = (
        weakref.ref(samples, lambda _, key=key: _SPLITS.pop(key, None)),
        len(samples),
        split,
    )
    return split


def compare_cases(
    row_a: Mapping,
    row_b: Mapping,
    samples_a: pd.DataFrame | None = None,
    samples_b: pd.DataFrame | None = None,
) -> MedianRatio:
    """Device time of case a against case b: bootstrap where both runs kept samples, else the
    normal approximation from the stored p50, IQR and repetition count. samples_b defaults to
    samples_a (two cases of one run)."""
    samples_b = samples_a if samples_b is None else samples_b
    xa = case_samples(samples_a, str(row_a.get("case")))
    xb = case_samples(samples_b, str(row_b.get("case")))
    if len(xa) >= 2 and len(xb) >= 2:
        return compare_samples(xa, xb)
    return compare_summaries(
        float(row_a["device_p50_ms"]),
        _iqr(row_a),
        _reps(row_a),
        float(row_b["device_p50_ms"]),
        _iqr(row_b),
        _reps(row_b),
    )


def _iqr(row: Mapping) -> float:
    value = row.get("device_iqr_ms")
    return 0.0 if value is None or pd.isna(value) else float(value)


def _reps(row: Mapping) -> int:
    value = row.get("device_reps")
    return 1 if value is None or pd.isna(value) else int(value)
