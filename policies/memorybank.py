"""MemoryBank (Zhong, Guo, Gao, Ye & Wang, AAAI 2024) as an assistant-memory policy.

Sources:
- paper, §Memory Updating with a Forgetting Mechanism: Ebbinghaus retention
  ``R = exp(-t / S)``; S (memory strength) starts at 1 on first mention and grows by 1 each
  time the memory is recalled, which also resets t to 0; t in days. Memories whose retention
  has fallen low are forgotten (the threshold is not given: ``forget_below``).
- released code (``variant="code"``, github.com/zhongwanjun/MemoryBank-SiliconFriend,
  memory_bank/memory_retrieval/forget_memory.py, as published descriptions of it state):
  three strength levels S = 1, 2, 3 days (1 + recalls, capped at 3), a memory is kept with
  probability R at each forgetting pass (a seeded draw: same seed, same result), and anything
  not recalled for 30 days is dropped.

memsim choices (docs/policies/memorybank.md): a reinforcing mention and a retrieval are both
recalls (policies/reference.py); the forgetting pass is the daily ``decay`` job; ranking is
cosine x R.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from memsim.engine import decay
from memsim.engine.events import Claim
from memsim.engine.params import Params, param

from .reference import REVIEW_DOC, ReferencePolicy

_PAPER = "Zhong et al. AAAI 2024 §Memory Updating with a Forgetting Mechanism"
_CODE = "MemoryBank-SiliconFriend forget_memory.py (released code)"


@dataclass(frozen=True)
class MemoryBankParams(Params):
    variant: str = param("paper", choices=("paper", "code"), doc=f"{_PAPER} / {_CODE}")
    initial_strength: float = param(1.0, lo=0.0, lo_open=True, doc=f"{_PAPER}: S = 1 at first")
    strength_step: float = param(1.0, lo=0.0, doc=f"{_PAPER}: S += 1 per recall")
    max_strength: float = param(
        3.0, lo=0.0, lo_open=True, doc=f"{_CODE}: three levels S = 1, 2, 3 (variant code)"
    )
    cutoff_days: float = param(
        30.0, lo=0.0, lo_open=True, doc=f"{_CODE}: dropped after 30 days (variant code)"
    )
    forget_below: float = param(
        0.05,
        lo=0.0,
        hi=1.0,
        doc=f"memsim choice ({_PAPER} gives no threshold): forget when R < this (variant paper)",
    )
    reinforce_cosine: float = param(0.85, lo=-1.0, hi=1.0, doc=REVIEW_DOC)
    retrieval_is_review: bool = param(True, doc=REVIEW_DOC)


class MemoryBank(ReferencePolicy):
    """MemoryBank's Ebbinghaus forgetting. See the module docstring."""

    Params: ClassVar[type[Params]] = MemoryBankParams
    params: MemoryBankParams

    def setup(self) -> None:
        s = self.store
        s.add_column("memory_strength", np.float64, 0.0)
        s.add_column("last_recall", np.float64, 0.0)

    def _create(self, claim: Claim, now: float) -> dict[str, float]:
        return {
            "memory_strength": float(self._cap(self.params.initial_strength)),
            "last_recall": now,
        }

    def _cap(self, s: float | np.ndarray) -> float | np.ndarray:
        return np.minimum(s, self.params.max_strength) if self.params.variant == "code" else s

    def _review(self, rows: np.ndarray, now: float) -> None:
        s = self.store
        s["memory_strength"][rows] = self._cap(
            s["memory_strength"][rows] + self.params.strength_step
        )
        s["last_recall"][rows] = now

    def days_since_recall(self, now: float, rows: np.ndarray | None = None) -> np.ndarray:
        return np.maximum(now - self.store.at("last_recall", rows), 0.0)

    def retention(self, now: float, rows: np.ndarray | None = None) -> np.ndarray:
        return decay.retrieval_strength(
            self.days_since_recall(now, rows), self.store.at("memory_strength", rows)
        )

    def _forgets(self, now: float, rows: np.ndarray) -> np.ndarray:
        if self.params.variant == "paper":
            return super()._forgets(now, rows)
        keep = self._draws(now, rows) < self.retention(now, rows)
        old = self.days_since_recall(now, rows) > self.params.cutoff_days
        out: np.ndarray = ~keep | old
        return out

    def _draws(self, now: float, rows: np.ndarray | None = None) -> np.ndarray:
        """The code variant's uniform draw in [0, 1) per memory (of ``rows``, or every row)
        at the pass at ``now``: a pure function of (policy seed, minute of the pass, memory
        identity), so independent of batching, call order and storage order (same seed,
        same result)."""
        keys = self.store.tie_keys(f"{self.seed}:keep:{int(round(now * 1440))}", rows)
        return (keys >> np.uint64(11)).astype(np.float64) * 2.0**-53

    def idle_until(self, now: float, until: float) -> float:
        """Paper variant: the closed-form crossing (ReferencePolicy.idle_until). Code
        variant: a memory may be dropped at any pass (kept with probability R < 1), so the
        passes are not skipped blindly: the draws are pure functions of (seed, time, memory),
        so the passes after ``now`` are evaluated in turn and the first that would drop a
        memory is returned (``until`` if none does before it). Exact, not an estimate."""
        if self.params.variant == "paper":
            return super().idle_until(now, until)
        if self.store.n == 0 or not self._live().any():
            return until
        every = min(j.every for j in self.schedule if j.name == "decay")
        t = (math.floor(now / every) + 1) * every
        while t < until:
            if len(self._doomed(t)):
                return t
            t = (math.floor(t / every + 0.5) + 1) * every
        return until


@dataclass(frozen=True)
class MemoryBankCodeParams(MemoryBankParams):
    """memorybank-code: MemoryBank as its released code behaves; every other constant is the
    paper's."""

    variant: str = param(
        "code",
        choices=("paper", "code"),
        doc=f"memorybank-code: {_CODE} (three levels, kept with probability R, 30-day cut-off)",
    )


class MemoryBankCode(MemoryBank):
    """MemoryBank as built (docs/policies/memorybank.md §The code variant)."""

    Params: ClassVar[type[Params]] = MemoryBankCodeParams
