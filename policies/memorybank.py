"""MemoryBank (Zhong, Guo, Gao, Ye & Wang, AAAI 2024) as an assistant-memory policy.

Sources:
- paper, §Memory Updating with a Forgetting Mechanism: Ebbinghaus retention
  ``R = exp(-t / S)``; S (memory strength) starts at 1 on first mention and grows by 1 each
  time the memory is recalled, which also resets t to 0; t in days. Memories whose retention
  has fallen low are forgotten (the threshold is not given: ``forget_below``).
- released code (``variant="code"``): github.com/zhongwanjun/MemoryBank-SiliconFriend,
  ``memory_bank/memory_retrieval/forget_memory.py`` as stored at commit
  3869efcc2c5847e78353b4c53056903f5d1730a6, the newer of the file's two stored versions
  (HEAD, cf61c41 per the issue, does not change it). Line 36 ``return math.exp(-t / 5*S)``,
  which Python reads as exp(-(t / 5) x S): a stronger memory fades FASTER. Line 106 S = 1
  for a new memory; lines 69-70 each recalled memory gets S += 1 (no cap) and its last
  recall date reset; line 60 t counts whole calendar days; line 119 at every load a memory
  is forgotten when ``random.random() > retention_probability`` (kept with probability R;
  memsim draws from the policy's seeded identity-keyed numbers); lines 49-50 ``memory_level
  = 3`` and ``total_date = 30`` are set and never read. Every dialog turn is its own memory
  (lines 98-120): a repeated statement is a new memory, not a recall. Search ranks by
  embedding similarity alone (``similarity_search_with_score``), and every returned memory
  is recalled.
- superseded upload (``variant="upload-0cc7111"``): commit
  0cc7111a267464964a008255d509c96ffdb636e4 of the same file, replaced the same day: line 36
  ``math.exp(-t / S)``, three strength levels S = 1, 2, 3 (lines 49, 52-55; a recall moves a
  memory one level up, capped at the third), line 83 anything at least ``total_date`` = 30
  whole days past its last recall is dropped, line 87 kept when ``random.random() < R``.

memsim choices (docs/policies/memorybank.md): a load of the memory file is the daily
``decay`` pass; the paper variant counts a reinforcing mention and a retrieval as recalls
(policies/reference.py) and ranks by cosine x R.
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
_CODE = "MemoryBank-SiliconFriend forget_memory.py @3869efc (released code)"
_UPLOAD = "MemoryBank-SiliconFriend forget_memory.py @0cc7111 (superseded upload)"
VARIANTS = ("paper", "code", "upload-0cc7111")
# the variants that follow the released files: draws at each load, whole days, ranking by
# similarity alone, every dialog turn its own memory
FILE_VARIANTS = frozenset({"code", "upload-0cc7111"})


@dataclass(frozen=True)
class MemoryBankParams(Params):
    variant: str = param("paper", choices=VARIANTS, doc=f"{_PAPER} / {_CODE} / {_UPLOAD}")
    initial_strength: float = param(
        1.0, lo=0.0, lo_open=True, doc=f"{_PAPER}: S = 1 at first ({_CODE} line 106)"
    )
    strength_step: float = param(1.0, lo=0.0, doc=f"{_PAPER}: S += 1 per recall ({_CODE} line 69)")
    code_days_divisor: float = param(
        5.0,
        lo=0.0,
        lo_open=True,
        doc=f"{_CODE} line 36: math.exp(-t / 5*S) = exp(-(t / 5) x S) (variant code)",
    )
    max_strength: float = param(
        3.0,
        lo=0.0,
        lo_open=True,
        doc=f"{_UPLOAD} lines 49, 52-55: three levels S = 1, 2, 3 (variant upload-0cc7111)",
    )
    cutoff_days: float = param(
        30.0,
        lo=0.0,
        lo_open=True,
        doc=f"{_UPLOAD} lines 50, 83: dropped at 30 whole days (variant upload-0cc7111)",
    )
    forget_below: float = param(
        0.05,
        lo=0.0,
        hi=1.0,
        doc=f"memsim choice ({_PAPER} gives no threshold): forget when R < this (variant paper)",
    )
    reinforce_cosine: float = param(
        0.85, lo=-1.0, hi=1.0, doc=f"{REVIEW_DOC} (variant paper; the code never merges)"
    )
    retrieval_is_review: bool = param(True, doc=REVIEW_DOC)


class MemoryBank(ReferencePolicy):
    """MemoryBank's Ebbinghaus forgetting. See the module docstring."""

    Params: ClassVar[type[Params]] = MemoryBankParams
    params: MemoryBankParams

    def setup(self) -> None:
        s = self.store
        s.add_column("memory_strength", np.float64, 0.0)
        s.add_column("last_recall", np.float64, 0.0)

    @property
    def follows_the_files(self) -> bool:
        """Whether the variant follows a released forget_memory.py (not the paper)."""
        return self.params.variant in FILE_VARIANTS

    def repeat_cosine(self) -> float:
        # forget_memory.py lines 98-120: each dialog turn is its own memory
        return math.inf if self.follows_the_files else float(self.params.reinforce_cosine)

    def _create(self, claim: Claim, now: float) -> dict[str, float]:
        return {
            "memory_strength": float(self._cap(self.params.initial_strength)),
            "last_recall": now,
        }

    def _cap(self, s: float | np.ndarray) -> float | np.ndarray:
        if self.params.variant == "upload-0cc7111":
            return np.minimum(s, self.params.max_strength)
        return s

    def _review(self, rows: np.ndarray, now: float) -> None:
        s = self.store
        s["memory_strength"][rows] = self._cap(
            s["memory_strength"][rows] + self.params.strength_step
        )
        s["last_recall"][rows] = now

    def days_since_recall(self, now: float, rows: np.ndarray | None = None) -> np.ndarray:
        """t: days since the last recall; whole calendar days for the released files
        (``_get_date_difference`` compares dates)."""
        last = self.store.at("last_recall", rows)
        if self.follows_the_files:
            return np.maximum(np.floor(now) - np.floor(last), 0.0)
        return np.maximum(now - last, 0.0)

    def retention(self, now: float, rows: np.ndarray | None = None) -> np.ndarray:
        t = self.days_since_recall(now, rows)
        strength = self.store.at("memory_strength", rows)
        if self.params.variant == "code":
            return ebbinghaus_as_coded(t, strength, self.params.code_days_divisor)
        return decay.retrieval_strength(t, strength)

    def _scores(self, sims: np.ndarray, live: np.ndarray, now: float, k: int) -> np.ndarray:
        """The released files rank by embedding similarity alone; the paper variant by
        cosine x R (memsim's reading)."""
        if not self.follows_the_files:
            return super()._scores(sims, live, now, k)
        return np.where(live, sims, -np.inf)

    def _forgets(self, now: float, rows: np.ndarray) -> np.ndarray:
        if not self.follows_the_files:
            return super()._forgets(now, rows)
        draws, r = self._draws(now, rows), self.retention(now, rows)
        if self.params.variant == "code":
            out: np.ndarray = draws > r  # line 119: random.random() > retention_probability
            return out
        kept = (draws < r) & (self.days_since_recall(now, rows) < self.params.cutoff_days)
        return ~kept

    def _draws(self, now: float, rows: np.ndarray | None = None) -> np.ndarray:
        """The released files' uniform draw in [0, 1) per memory (of ``rows``, or every row)
        at the pass at ``now``: a pure function of (policy seed, minute of the pass, memory
        identity), so independent of batching, call order and storage order (same seed,
        same result)."""
        keys = self.store.tie_keys(f"{self.seed}:keep:{int(round(now * 1440))}", rows)
        return (keys >> np.uint64(11)).astype(np.float64) * 2.0**-53

    def idle_until(self, now: float, until: float) -> float:
        """Paper variant: the closed-form crossing (ReferencePolicy.idle_until). The released
        files: a memory may be dropped at any pass (kept with probability R < 1), so the
        passes are not skipped blindly: the draws are pure functions of (seed, time, memory),
        so the passes after ``now`` are evaluated in turn and the first that would drop a
        memory is returned (``until`` if none does before it). Exact, not an estimate."""
        if not self.follows_the_files:
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


def ebbinghaus_as_coded(t: np.ndarray, strength: np.ndarray, divisor: float) -> np.ndarray:
    """forget_memory.py line 36 as Python evaluates ``math.exp(-t / 5*S)``: division and
    multiplication bind left to right, so exp(-(t / divisor) x S)."""
    return np.exp(-(np.asarray(t, dtype=np.float64) / divisor) * strength)


@dataclass(frozen=True)
class MemoryBankCodeParams(MemoryBankParams):
    """memorybank-code: MemoryBank as its released code behaves; every other constant is the
    paper's."""

    variant: str = param(
        "code",
        choices=VARIANTS,
        doc=f"memorybank-code: {_CODE} (exp(-(t / 5) x S), S uncapped, kept with "
        "probability R at each load); upload-0cc7111 names the superseded upload",
    )


class MemoryBankCode(MemoryBank):
    """MemoryBank as built (docs/policies/memorybank.md §The code variant)."""

    Params: ClassVar[type[Params]] = MemoryBankCodeParams
