"""The LLM protocol every policy talks to, and the mock's configuration.

A policy never sees ground truth directly: it asks the LLM to extract claims, embed them,
classify a new claim against old ones, and summarize or synthesize. ``MockLLM``
(memsim.engine.mockllm) answers from the claims the stream carries, deterministically given its
seed, with configurable error injection; ``ModelLLM`` (memsim.engine.openai_llm) puts a real model
behind the same protocol.

Determinism rule: every random choice of the mock (an injected error, paraphrase noise) is
a pure function of (seed, operation, item key), never of call order, so batched and
one-by-one ingest see identical answers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .events import Claim, Episode, Query
from .params import Params, param

# Raw answers of classify(..., answer="relation"); anything else is an invalid answer.
SUPPORTS, CONTRADICTS, PARTIAL, IRRELEVANT = "SUPPORTS", "CONTRADICTS", "PARTIAL", "IRRELEVANT"
RELATIONS = (SUPPORTS, CONTRADICTS, PARTIAL, IRRELEVANT)
NONE = "NONE"  # classify(..., answer="index") reply when nothing is contradicted


@dataclass(frozen=True)
class Embedded:
    """Unit-norm float32 rows; ``ok[i]`` is False where embedding item i failed (row is 0)."""

    vectors: np.ndarray
    ok: np.ndarray


@runtime_checkable
class LLM(Protocol):
    dim: int
    seed: int

    def extract(self, episode: Episode) -> tuple[Claim, ...] | None:
        """The claims an episode makes; None when extraction failed (the policy falls back
        as its seed says). An episode without structured claims yields one text-only claim
        (key ``""``, value = its text). Importance/category may carry injected noise."""

    def embed(self, items: Sequence[Claim | str], keys: Sequence[str]) -> Embedded:
        """Embed claims (calibrated claims embedder) or plain strings (hashed n-grams).
        ``keys`` name each item stably (e.g. ``"ep12#0"``): paraphrase noise and injected
        failures are functions of (seed, key), so the same key gives the same vector."""

    def embed_query(self, query: Query) -> np.ndarray | None:
        """A query's unit vector (from its keys if it has any, else its text); None if the
        embedding failed."""

    def classify(
        self, new: Claim, candidates: Sequence[Claim], *, answer: str, key: str
    ) -> str | list[str]:
        """``answer="index"``: one raw reply naming the 1-based index of the candidate that
        ``new`` directly contradicts, or ``"NONE"`` (may be an invalid string under error
        injection). ``answer="relation"``: one raw reply per candidate among RELATIONS (or
        an invalid string). ``key`` names the call for deterministic error injection."""

    def summarize(self, texts: Sequence[str], *, key: str) -> str:
        """1-3 sentences summarizing ``texts``, or ``"NONE"`` for trivial chat."""

    def synthesize(self, claims: Sequence[Claim], *, key: str) -> Claim:
        """One claim generalizing ``claims``: their majority (key, value) when they share a
        key, else a topic-level ``category="meta"`` claim."""


# Capabilities only some LLMs have, checked with isinstance (a real model has neither, and
# runs without them).


@runtime_checkable
class TruthBound(Protocol):
    """An LLM that plays the user who asks: it reads the stream's ground truth (the mock's
    ``modes.query_value``). A real model cannot know it."""

    def bind_truth(self, truth: Any) -> None:
        """Give the LLM the stream's ground truth (memsim.engine.truth.GroundTruth)."""


@runtime_checkable
class Configurable(Protocol):
    """An LLM that can state everything that determines its answers (for result manifests)."""

    def config(self) -> dict[str, Any]:
        """A JSON-ready description of the LLM's settings, its ``seed`` among them."""


@runtime_checkable
class Metered(Protocol):
    """An LLM that measures what its calls cost (a real model: memsim.engine.openai_llm)."""

    def usage(self) -> dict[str, Any]:
        """``{"methods": {method: {calls, tokens_in, tokens_out, latency_ms}}, "total":
        {...}, "faults": {kind: count}, "fault_messages": [...]}``."""


@dataclass(frozen=True)
class Bands(Params):
    """Target cosine similarities of the claims embedder (see memsim.engine.mockllm).

    Defaults sit inside the bands the seed thresholds assume: a paraphrase of the same fact
    and value above 0.85, the same fact with a changed value in 0.70-0.85, a related fact
    (same topic) in 0.40-0.70, an unrelated fact near 0. ``spread`` scales the random part
    (paraphrase noise and chance overlaps) for stress tests; 1.0 is calibrated. The ``*_sd``
    fields set each band's spread on its own (a measured embedder's)."""

    paraphrase: float = param(0.92, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    changed_value: float = param(0.77, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    related: float = param(0.55, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    spread: float = param(1.0, lo=0.0)
    # the standard deviation of each band's cosines (0: as ``spread`` gives, the default); set
    # from a measured embedder (memsim.engine.bands.measured_band_overrides), each solved
    # into the spread of the block that band adds (memsim.engine.embed.ClaimsEmbedder)
    paraphrase_sd: float = param(0.0, lo=0.0, hi=1.0, doc="sd of paraphrase cosines (0: spread)")
    changed_value_sd: float = param(
        0.0, lo=0.0, hi=1.0, doc="sd of changed-value cosines (0: spread)"
    )
    related_sd: float = param(0.0, lo=0.0, hi=1.0, doc="sd of related-fact cosines (0: spread)")
    unrelated_sd: float = param(0.0, lo=0.0, hi=1.0, doc="sd of unrelated-fact cosines (0: spread)")

    def __post_init__(self) -> None:
        super().__post_init__()
        from .errors import ParamError

        if not (self.related < self.changed_value < self.paraphrase):
            raise ParamError(
                f"Bands: need related < changed_value < paraphrase, got "
                f"{self.related} < {self.changed_value} < {self.paraphrase}"
            )


@dataclass(frozen=True)
class Faults(Params):
    """Error injection rates of the mock LLM, each a probability per call or item."""

    extract_fail: float = param(0.0, lo=0.0, hi=1.0, doc="extraction failure: policy fallback")
    embed_fail: float = param(0.0, lo=0.0, hi=1.0, doc="embedding failure per item")
    wrong_class: float = param(0.0, lo=0.0, hi=1.0, doc="a wrong (but valid) classification")
    invalid_answer: float = param(0.0, lo=0.0, hi=1.0, doc="an unparseable classification reply")
    importance_jitter: float = param(0.0, lo=0.0, hi=1.0, doc="std of noise added to importance")
    wrong_category: float = param(
        0.0, lo=0.0, hi=1.0, doc="a random category instead of the true one"
    )


SYNTHESIS_MODES = ("majority", "latest", "first", "all")
SUMMARY_MODES = ("given", "latest", "first", "all")


@dataclass(frozen=True)
class Modes(Params):
    """The mock's behaviour where a real model has a choice to make (docs/mock-llm.md
    justifies each default). Set with ``--llm modes.NAME=VALUE``; recorded in manifests.
    Classification noise is ``faults.wrong_class`` (truth plus that rate)."""

    synthesis: str = param(
        "majority",
        choices=SYNTHESIS_MODES,
        doc="synthesize() over one key: the majority value (ties: latest), the latest "
        "(last given) claim's, the first's, or all distinct values in order with positions",
    )
    summary: str = param(
        "given",
        choices=SUMMARY_MODES,
        doc="summarize(): first clause of the first 3 texts as given, of the latest text "
        "only, of the first text only, or of every text",
    )
    entity_forms: int = param(
        1, lo=1, doc="surface forms per fact key that extraction may return (1: exact key)"
    )
    resolution_error: float = param(
        0.0, lo=0.0, hi=1.0, doc="share of extracted keys resolved to no known form"
    )
    chatter_confidence: float = param(
        -1.0,
        lo=-1.0,
        hi=1.0,
        doc="extraction confidence of chatter claims (-1: as the stream states)",
    )
    fact_confidence_spread: float = param(
        0.0, lo=0.0, hi=1.0, doc="std of noise added to the extraction confidence of facts"
    )
    query_value: float = param(
        0.0,
        lo=0.0,
        hi=1.0,
        doc="how much of the asked fact's current value a query embedding carries (0: the "
        "key only; 1: as much as a statement of the fact)",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        from .errors import ParamError

        if self.chatter_confidence != -1.0 and not 0.0 <= self.chatter_confidence <= 1.0:
            raise ParamError(
                f"modes.chatter_confidence={self.chatter_confidence!r} is outside [0, 1] "
                "(or -1: as the stream states)"
            )


# Shared defaults (frozen, so one instance can serve as every argument default).
DEFAULT_BANDS = Bands()
DEFAULT_FAULTS = Faults()
DEFAULT_MODES = Modes()
