"""Scalar reference twins of memsim.engine.kernels, written straight from the seed formulas with
``math`` and plain Python. Slow and obvious on purpose: tests prove each vectorized kernel
equal to its twin. Same function names as memsim.engine.kernels.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence


def exp_decay(x0: float, rate: float, dt: float) -> float:
    return x0 * math.exp(-rate * dt)


def days_since_access(now: float, last_access: float, created: float) -> float:
    return max(now - (created if math.isnan(last_access) else last_access), 0.0)


def half_life_decay(c: float, dt: float, half_life: float) -> float:
    factor: float = 0.5 ** (dt / half_life)
    return c * factor


def beta_mean(alpha: float, beta: float) -> float:
    return alpha / (alpha + beta)


def retrieval_strength(dt: float, stability: float) -> float:
    return math.exp(-dt / stability)


def stability_update(
    stability: float, hours_since_last: float, cap: float, bonus: float = 0.1
) -> float:
    return min(cap, stability * (1 + bonus * math.log(1 + hours_since_last / 24)))


def hyperbolic_salience(
    confidence: float, times_accessed: float, dt: float, half_life: float, offset: float = 0.0
) -> float:
    return confidence * (math.log(times_accessed + 1) + offset) / (dt / half_life + 1)


def cosmo_decay_rate(
    recall_frequency: float,
    decay_gradient: float,
    base_rate: float = 0.02,
    state_is_candidate: bool = False,
    confidence: float = 1.0,
    penalty_threshold: float = 0.8,
    penalty_slope: float = 2.0,
) -> float:
    if recall_frequency == 0 and decay_gradient < 0:
        power = math.inf  # 0 ** negative: the limit
    else:
        power = recall_frequency**decay_gradient
    base_decay_rate = base_rate / (1 + power)
    if state_is_candidate and confidence < penalty_threshold:
        return base_decay_rate * (1 + (1 - confidence) * penalty_slope)
    if state_is_candidate:
        return 0.0
    return base_decay_rate


def weighted_sum(weights: Sequence[float], values: Sequence[float]) -> float:
    total = 0.0
    for i, (w, v) in enumerate(zip(weights, values)):
        total = w * v if i == 0 else total + w * v
    return total


def pai_score(
    cos: float,
    importance: float,
    recency: float,
    stability: float,
    subject_match: float,
    *,
    w_cos: float = 0.50,
    w_importance: float = 0.20,
    w_recency: float = 0.10,
    w_stability: float = 0.05,
    w_subject: float = 0.15,
    importance_scale: float = 10.0,
    stability_scale: float = 5.0,
    insight: bool = False,
    insight_multiplier: float = 1.0,
) -> float:
    score = (
        w_cos * cos
        + w_importance * (importance / importance_scale)
        + w_recency * recency
        + w_stability * (stability / stability_scale)
        + w_subject * subject_match
    )
    return score * insight_multiplier if insight else score


def topk(scores: Sequence[float], k: int) -> list[int]:
    """Full stable sort by descending score (+inf first), NaN and -inf left out, first k."""
    kept = [i for i, s in enumerate(scores) if s > -math.inf]  # NaN compares False
    return sorted(kept, key=lambda i: (-scores[i], i))[: max(0, k)]


def masked_topk(scores: Sequence[float], mask: Sequence[bool], k: int) -> list[int]:
    return [i for i in topk([s if m else -math.inf for s, m in zip(scores, mask)], k)]


def batch_topk(scores: Sequence[Sequence[float]], k: int) -> list[list[int]]:
    k = max(0, k)
    return [(ids + [-1] * k)[:k] for ids in (topk(row, k) for row in scores)]


def scores_matvec(embeddings: Sequence[Sequence[float]], query: Sequence[float]) -> list[float]:
    """One query vector; the kernel's (d, m) form is m of these side by side."""
    return [math.fsum(e * q for e, q in zip(row, query)) for row in embeddings]


# -- reference memory models (issue 14) ------------------------------------------------------


def actr_activation(
    times: Sequence[float], now: float, decay: float = 0.5, min_age: float = 0.0
) -> float:
    total = sum(max(now - t, min_age) ** -decay for t in times)
    return math.log(total) if total > 0 else -math.inf


def actr_activation_spacing(
    times: Sequence[float], now: float, a: float = 0.1768, c: float = 0.2170, min_age: float = 0.0
) -> float:
    decays: list[float] = []
    for j, tj in enumerate(times):
        m = actr_activation_with(times[:j], decays, tj, min_age)
        decays.append(c * _overflowing(math.exp, m) + a)
    return actr_activation_with(times, decays, now, min_age)


def actr_activation_with(
    times: Sequence[float], decays: Sequence[float], now: float, min_age: float
) -> float:
    total = sum(_overflowing(pow, max(now - t, min_age), -d) for t, d in zip(times, decays))
    return math.log(total) if total > 0 else -math.inf


def _overflowing(fn: Callable[..., float], *args: float) -> float:
    """``fn(*args)``, +inf where Python raises OverflowError and numpy's float64 gives inf
    (presentations at one instant under ``min_age`` < 1: each one's decay grows from the
    activation of those before, until ``min_age ** -decay`` overflows)."""
    try:
        return fn(*args)
    except OverflowError:
        return math.inf


def logistic_recall(activation: float, tau: float, s: float) -> float:
    z = -(activation - tau) / s
    return 0.0 if z > 700 else 1.0 / (1.0 + math.exp(z))


def fsrs_retrievability(elapsed: float, stability: float, w20: float) -> float:
    factor: float = 0.9 ** (1 / -w20) - 1
    r: float = (1 + factor * elapsed / stability) ** -w20
    return r


def fsrs_review_good(
    stability: float, difficulty: float, elapsed: float, w: Sequence[float]
) -> tuple[float, float]:
    if elapsed < 1:
        s = stability * max(math.e ** (w[17] * (0 + w[18])) * stability ** -w[19], 1.0)
    else:
        r = fsrs_retrievability(elapsed, stability, w[20])
        s = stability * (
            1
            + math.e ** w[8]
            * (11 - difficulty)
            * stability ** -w[9]
            * (math.e ** ((1 - r) * w[10]) - 1)
        )
    d0_easy = w[4] - math.e ** (w[5] * 3) + 1
    d = w[7] * d0_easy + (1 - w[7]) * difficulty
    return max(s, 0.001), min(max(d, 1.0), 10.0)


def ebisu_predict_recall(alpha: float, beta: float, half_life: float, elapsed: float) -> float:
    dt = elapsed / half_life

    def lbeta(x: float, y: float) -> float:
        return math.lgamma(x) + math.lgamma(y) - math.lgamma(x + y)

    return min(1.0, math.exp(lbeta(alpha + dt, beta) - lbeta(alpha, beta)))


def minmax_normalize(x: Sequence[float]) -> list[float]:
    if not x:
        return []
    lo, hi = min(x), max(x)
    return [0.5 if hi == lo else (v - lo) / (hi - lo) for v in x]


def generative_agents_score(
    recency: Sequence[float],
    importance: Sequence[float],
    relevance: Sequence[float],
    w: Sequence[float] = (1.0, 1.0, 1.0),
) -> list[float]:
    cols = [minmax_normalize(recency), minmax_normalize(importance), minmax_normalize(relevance)]
    return [weighted_sum(w, [c[i] for c in cols]) for i in range(len(recency))]
