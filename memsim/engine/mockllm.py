"""MockLLM: a deterministic, fault-injectable stand-in for the LLM a memory system calls.

It answers from the ground truth the stream's claims carry (see memsim.engine.llm for the
protocol). Every random decision (an injected fault, importance noise, paraphrase noise in
embeddings) is a pure function of (seed, operation name, item key) through blake2b, never
of call order, so batched and one-by-one calls give identical answers.

Fault keys: extract on the episode id; embed on each item key; embed_query on the query id;
classify on the call's ``key`` (plus ``#i`` for candidate i in relation mode);
importance/category noise on ``"<episode id>#<claim index>"``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import operator
import re
from collections import Counter, OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .embed import (
    DEFAULT_TEXT_EMBEDDER,
    shared_claims_embedder,
    shared_text_embedder,
    stable_normal,
    stable_uniform,
)
from .events import Claim, Episode, Query
from .llm import (
    CONTRADICTS,
    DEFAULT_BANDS,
    DEFAULT_FAULTS,
    DEFAULT_MODES,
    IRRELEVANT,
    NONE,
    PARTIAL,
    RELATIONS,
    SUPPORTS,
    Bands,
    Configurable,
    Embedded,
    Faults,
    Modes,
    TruthBound,
)

# The categories ``wrong_category`` draws from (seed-neutral vocabulary of memsim.engine.events).
CATEGORIES = ("fact", "preference", "relationship", "decision", "event", "sentiment", "reminder")

# summarize() answers "NONE" when all texts together hold fewer content words than this:
# "hi", "ok thanks!", "lol same" are chat, not something worth a summary.
MIN_CONTENT_WORDS = 8

# At most this many sentences in a summary (the protocol asks for 1-3).
MAX_SUMMARY_SENTENCES = 3

# Unparseable replies used by the invalid_answer fault; index mode also gets out-of-range
# indices ("0" and n + 1 + 98), which parse as integers but name no candidate.
INVALID_REPLIES = ("I think maybe", "7x", "", "CONTRADICTS?", "Candidate two, probably")

_STOPWORDS = frozenset(
    """
a an the and or but if then so to of in on at by for with from as is are was were be been
being am i me my we our you your he she it its they them their this that these those there
here do does did done have has had not no yes ok okay oh hi hey hello thanks thank lol haha
yeah yep sure just really very too also well um uh hmm what who how when where why which
will would can could should shall may might must up down out about into over again same
""".split()
)
_WORD = re.compile(r"[0-9a-z]+(?:'[0-9a-z]+)*")
_CLAUSE_END = re.compile(r"[.;!?\n]")


@functools.lru_cache(maxsize=1 << 16)  # a classify call compares one value with many
def _norm_text(s: str) -> str:
    """Case- and whitespace-insensitive form used to compare values and texts."""
    return " ".join(s.casefold().split())


def content_words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in _STOPWORDS]


def truth_relation(new: Claim, old: Claim) -> str:
    """The true relation of ``new`` to ``old`` (what a perfect classifier answers).

    Same key and value: SUPPORTS. Same key, other value: CONTRADICTS, or PARTIAL when both
    claims carry a ``context`` attribute and the contexts differ (each true in its own
    context). Different keys: IRRELEVANT. Two text-only claims: SUPPORTS if their texts are
    equal up to case and whitespace, else IRRELEVANT.
    """
    return truth_relations(new, (old,))[0]


_UNREAD = object()


def truth_relations(new: Claim, olds: Sequence[Claim]) -> list[str]:
    """:func:`truth_relation` of ``new`` to each of ``olds``, in one loop over them (a
    belief's revision asks about dozens of older ones, some three million times a year)."""
    key, value = new.key, new.value
    norm_value: str | None = None  # (normalized at the first value that differs)
    c_new: Any = _UNREAD  # new's context, read at the first contradicting pair
    out: list[str] = []
    for old in olds:
        if old.key != key:
            out.append(IRRELEVANT)
            continue
        same_value = old.value == value
        if not same_value:
            if norm_value is None:
                norm_value = _norm_text(value)
            same_value = _norm_text(old.value) == norm_value
        if not key:
            out.append(SUPPORTS if same_value else IRRELEVANT)
        elif same_value:
            out.append(SUPPORTS)
        else:
            if c_new is _UNREAD:
                c_new = new.attr("context")
            c_old = old.attr("context")
            out.append(
                PARTIAL
                if c_new is not None and c_old is not None and c_new != c_old
                else CONTRADICTS
            )
    return out


class MockLLM(TruthBound, Configurable):
    """Deterministic LLM from the stream's claims; see the module docstring.

    ``bands`` calibrates the claims embedder (memsim.engine.embed.ClaimsEmbedder); ``faults`` sets
    the error-injection rates (each fires for a given key iff its uniform draw is below the
    rate, so rate 0 never fires and rate 1 always does).
    """

    def __init__(
        self,
        seed: int = 0,
        dim: int = 384,
        bands: Bands = DEFAULT_BANDS,
        faults: Faults = DEFAULT_FAULTS,
        text_embedder: str = DEFAULT_TEXT_EMBEDDER,
        modes: Modes = DEFAULT_MODES,
        claim_text: bool = False,
        followups: Mapping[str, str] | None = None,
    ) -> None:
        if not isinstance(bands, Bands):
            raise TypeError(f"MockLLM: bands must be a memsim.engine.llm.Bands, got {bands!r}")
        if not isinstance(faults, Faults):
            raise TypeError(f"MockLLM: faults must be a memsim.engine.llm.Faults, got {faults!r}")
        if not isinstance(modes, Modes):
            raise TypeError(f"MockLLM: modes must be a memsim.engine.llm.Modes, got {modes!r}")
        self.modes = modes
        self.seed = int(seed)
        self.dim = int(dim)
        self.bands = bands
        self.faults = faults
        self.claims_embedder = shared_claims_embedder(self.dim, bands, self.seed)
        # plain text (streams without claims, e.g. LoCoMo): see memsim.engine.embed.TEXT_EMBEDDERS
        self.text_embedder_name = text_embedder
        self.text_embedder = shared_text_embedder(text_embedder, self.dim, self.seed)
        # text mode (a stream whose claims carry their sentence, e.g. synthetic text=1):
        # claims and questions embedded from their sentences by the text embedder, and under
        # modes.query_value the asking user's follow-up naming the current value, by query id
        self.claim_text = bool(claim_text)
        self.followups: dict[str, str] = dict(followups or {})
        self._truth: Any = None  # bound by bind_truth (modes.query_value only)
        self._exact_for: tuple[Modes, Faults, bool] | None = None  # _extraction_is_exact's
        self._tallies: OrderedDict[int, _Tally] = OrderedDict()  # synthesize's, by first claim

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_tallies"] = OrderedDict()  # (a cache: answers never depend on it)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.__dict__.setdefault("_tallies", OrderedDict())

    def config(self) -> dict[str, Any]:
        """Everything that determines this mock's answers (for result manifests)."""
        return {
            "llm": "mock",
            "seed": self.seed,
            "dim": self.dim,
            "text_embedder": self.text_embedder_name,
            "bands": self.bands.to_dict(),
            "faults": self.faults.to_dict(),
            "modes": self.modes.to_dict(),
            **({"claim_text": True} if self.claim_text else {}),
        }

    def __repr__(self) -> str:
        return (
            f"MockLLM(seed={self.seed}, dim={self.dim}, bands={self.bands!r}, "
            f"faults={self.faults!r})"
        )

    def _fires(self, rate: float, op: str, key: str) -> bool:
        return rate > 0.0 and stable_uniform(self.seed, op, key) < rate

    # -- extract ---------------------------------------------------------------
    def extract(self, episode: Episode) -> tuple[Claim, ...] | None:
        """The episode's claims (with injected importance/category noise), None on an
        injected failure. An episode without claims yields one text-only claim whose
        subject is the speaker (lowercased; the default speaker "user" is the owner)."""
        fail = self.faults.extract_fail
        if fail > 0.0 and self._fires(fail, "extract_fail", episode.id):
            return None
        claims = episode.claims
        if not claims:
            speaker = episode.speaker.strip().lower()
            subject = "owner" if speaker in ("", "user") else speaker
            claims = (Claim(key="", value=episode.text, category="fact", subject=subject),)
        if self._extraction_is_exact():
            return tuple(claims)  # what _noisy returns for each: the claim itself
        return tuple(self._noisy(c, f"{episode.id}#{i}") for i, c in enumerate(claims))

    def _extraction_is_exact(self) -> bool:
        """True when no mode or fault of ``_noisy`` can change a claim (the defaults); kept
        for the ``modes`` and ``faults`` it was computed from (extract runs per episode)."""
        m, f = self.modes, self.faults
        known = self._exact_for
        if known is None or known[0] is not m or known[1] is not f:
            exact = (
                m.chatter_confidence < 0.0
                and m.fact_confidence_spread <= 0.0
                and m.entity_forms <= 1
                and m.resolution_error <= 0.0
                and f.importance_jitter <= 0.0
                and f.wrong_category <= 0.0
            )
            known = self._exact_for = (m, f, exact)
        return bool(known[2])

    def _noisy(self, claim: Claim, item: str) -> Claim:
        changes: dict[str, Any] = {}
        m = self.modes
        if claim.noise and m.chatter_confidence >= 0.0:
            changes["confidence"] = m.chatter_confidence
        elif not claim.noise and m.fact_confidence_spread > 0.0:
            c = claim.confidence + m.fact_confidence_spread * stable_normal(
                self.seed, "fact_confidence", item
            )
            changes["confidence"] = min(1.0, max(0.0, c))
        if claim.key and (m.entity_forms > 1 or m.resolution_error > 0.0):
            changes["key"] = self._surface_key(claim.key, item)
        jitter = self.faults.importance_jitter
        if jitter > 0.0 and claim.importance is not None:  # unset stays unset
            imp = claim.importance + jitter * stable_normal(self.seed, "importance_jitter", item)
            changes["importance"] = min(1.0, max(0.0, imp))
        if self._fires(self.faults.wrong_category, "wrong_category", item):
            others = [c for c in CATEGORIES if c != claim.category]
            pick = stable_uniform(self.seed, "wrong_category_pick", item)
            changes["category"] = others[int(pick * len(others))]
        return dataclasses.replace(claim, **changes) if changes else claim

    def _surface_key(self, key: str, item: str) -> str:
        """The key entity resolution returns: one of ``entity_forms`` surface forms of the
        fact (form 0 is the key itself), or with rate ``resolution_error`` an unresolved
        form of its own (``key~?item``). The topic prefix is kept (same-topic relatedness)."""
        if self._fires(self.modes.resolution_error, "resolution_error", item):
            return f"{key}~?{item}"
        k = self.modes.entity_forms
        form = int(stable_uniform(self.seed, "entity_form", item) * k) if k > 1 else 0
        return key if form == 0 else f"{key}~{form}"

    # -- embed -----------------------------------------------------------------
    def embed(self, items: Sequence[Claim | str], keys: Sequence[str]) -> Embedded:
        """Claims with a key go to the calibrated claims embedder (in text mode, ``claim_text``:
        their ``text`` attribute to the text embedder); text-only claims (their value) and
        strings to the text embedder. A failed item has ok False and a 0 row."""
        n = len(items)
        if len(keys) != n:
            raise ValueError(f"MockLLM.embed: {n} items but {len(keys)} keys")
        ok = np.ones(n, dtype=bool)
        can_fail = self.faults.embed_fail > 0.0  # (no call per item at rate 0)
        claims_by_block = not self.claim_text
        if (
            n
            and claims_by_block
            and not can_fail
            and all(isinstance(it, Claim) and it.key for it in items)
        ):
            # every item a claim (a day's extraction): one call, no copy
            return Embedded(vectors=self.claims_embedder.embed(items, keys), ok=ok)
        claim_rows: list[int] = []
        text_rows: list[int] = []
        texts: list[str] = []
        for i, (item, key) in enumerate(zip(items, keys)):
            if can_fail and self._fires(self.faults.embed_fail, "embed_fail", key):
                ok[i] = False
            elif isinstance(item, Claim):
                if item.key and claims_by_block:
                    claim_rows.append(i)
                elif item.key:  # text mode: the sentence it was said in (else its value)
                    text_rows.append(i)
                    texts.append(str(item.attr("text") or item.value or item.key))
                else:
                    text_rows.append(i)
                    texts.append(item.value)
            elif isinstance(item, str):
                text_rows.append(i)
                texts.append(item)
            else:
                raise TypeError(
                    f"MockLLM.embed: item {i} ({key!r}) is neither a Claim nor a str: {item!r}"
                )
        out = np.zeros((n, self.dim), dtype=np.float32)
        if claim_rows:
            out[claim_rows] = self.claims_embedder.embed(
                [items[i] for i in claim_rows], [keys[i] for i in claim_rows]
            )
        if text_rows:
            out[text_rows] = self.text_embedder.embed(texts)
        return Embedded(vectors=out, ok=ok)

    def bind_truth(self, truth: Any) -> None:
        """Give the mock the stream's ground truth (memsim.engine.truth.GroundTruth), which
        ``modes.query_value`` reads: the current value of each asked key at the query. The
        mock stands in for the user who asks, so it may know what they know; policies
        only ever see the resulting vector."""
        self._truth = truth

    def embed_query(self, query: Query) -> np.ndarray | None:
        """From the query's keys (topic + key blocks, plus ``modes.query_value`` of the
        current value's block when the truth is bound) if it has any, else its text."""
        if self._fires(self.faults.embed_fail, "embed_query_fail", query.id):
            return None
        if query.keys and self.claim_text:
            # the question as asked; value-aware: the follow-up naming the current value
            said = self.followups.get(query.id) if self.modes.query_value > 0.0 else None
            text_row: np.ndarray = self.text_embedder.embed([said or query.text])[0]
            return text_row
        if query.keys:
            qv = self.modes.query_value
            if qv > 0.0:
                if self._truth is None:
                    raise RuntimeError(
                        f"modes.query_value={qv!r} needs the stream's truth: call "
                        "MockLLM.bind_truth(GroundTruth(stream)) before the run"
                    )
                current = self._current_values(query)
                return self.claims_embedder.embed_query(query.keys, current, qv)
            return self.claims_embedder.embed_query(query.keys)
        row: np.ndarray = self.text_embedder.embed([query.text])[0]
        return row

    def _current_values(self, query: Query) -> dict[str, str]:
        """The asked keys' current values; none for a query the stream does not hold (a
        policy's own probe) or one asked before its key was ever stated."""
        from .errors import UnknownIdError

        try:
            values: dict[str, str] = self._truth.current_values(query.id)
        except UnknownIdError:
            return {}
        return values

    # -- classify --------------------------------------------------------------
    def classify(
        self, new: Claim, candidates: Sequence[Claim], *, answer: str, key: str
    ) -> str | list[str]:
        """Truth from :func:`truth_relation`, then faults: ``invalid_answer`` replaces a
        reply by an unparseable one, else ``wrong_class`` by another valid one. In index
        mode with no candidates the only valid reply is NONE, so wrong_class cannot fire."""
        relations = truth_relations(new, candidates)
        if answer == "relation":
            if not (self.faults.invalid_answer > 0.0 or self.faults.wrong_class > 0.0):
                return relations  # no fault can fire
            out = []
            for i, rel in enumerate(relations):
                k = f"{key}#{i}"
                if self._fires(self.faults.invalid_answer, "invalid_answer", k):
                    out.append(self._pick(INVALID_REPLIES, "invalid_pick", k))
                elif self._fires(self.faults.wrong_class, "wrong_class", k):
                    out.append(self._pick([r for r in RELATIONS if r != rel], "wrong_pick", k))
                else:
                    out.append(rel)
            return out
        if answer == "index":
            n = len(candidates)
            truth = next((str(i + 1) for i, r in enumerate(relations) if r == CONTRADICTS), NONE)
            if self._fires(self.faults.invalid_answer, "invalid_answer", key):
                return self._pick(INVALID_REPLIES + ("0", str(n + 99)), "invalid_pick", key)
            if n and self._fires(self.faults.wrong_class, "wrong_class", key):
                valid = [str(i + 1) for i in range(n)] + [NONE]
                return self._pick([v for v in valid if v != truth], "wrong_pick", key)
            return truth
        raise ValueError(f"MockLLM.classify: answer must be 'index' or 'relation', got {answer!r}")

    def _pick(self, options: Sequence[str], op: str, key: str) -> str:
        return options[int(stable_uniform(self.seed, op, key) * len(options))]

    # -- summarize / synthesize -------------------------------------------------
    def summarize(self, texts: Sequence[str], *, key: str) -> str:
        """ "NONE" when the texts hold fewer than MIN_CONTENT_WORDS content words in all;
        else, by ``modes.summary``: the first clause of each of the first (up to 3) texts
        with content words ("given"), of the last such text only ("latest"), of the first
        only ("first"), or of every such text ("all"), one sentence each."""
        counts = [len(content_words(t)) for t in texts]  # each text's words found once
        if sum(counts) < MIN_CONTENT_WORDS:
            return NONE
        mode = self.modes.summary
        texts = [t for t, count in zip(texts, counts) if count]
        if mode == "latest":
            texts = texts[-1:]
        elif mode == "first":
            texts = texts[:1]
        limit = None if mode == "all" else MAX_SUMMARY_SENTENCES
        sentences = []
        for t in texts:
            clause = next((c.strip() for c in _CLAUSE_END.split(t) if content_words(c)), "")
            clause = clause.rstrip(",: ")
            sentences.append(clause[:1].upper() + clause[1:] + ".")
            if len(sentences) == limit:
                break
        return " ".join(sentences)

    def synthesize(self, claims: Sequence[Claim], *, key: str) -> Claim:
        """One shared key: the value chosen by ``modes.synthesis`` ("majority": the most
        stated, ties to the value seen last; "latest": the last claim's; "first": the
        first's; "all": every distinct value in order of first mention, each with the
        1-based positions stating it, e.g. "value1 @1,3; value2 @2"), the most common
        category among the claims stating it, importance = max of those set (None if none
        is), confidence = mean, the other fields from the last claim stating it.
        Several keys: a ``meta`` claim
        keyed by their longest common dotted prefix ("misc" if none), valued by their
        distinct values sorted and joined with "; "."""
        claims = list(claims)
        if not claims:
            raise ValueError(f"MockLLM.synthesize({key!r}): no claims to synthesize")
        mode = self.modes.synthesis
        if len(claims) >= _TALLY_MIN_CLAIMS and mode != "all":
            tally = self._tally(claims)
            if tally is not None:
                return tally.answer(mode)
        return _synthesized(claims, mode)

    def _tally(self, claims: list[Claim]) -> _Tally | None:
        """The :class:`_Tally` of ``claims`` (one key), carried on from the last call whose
        claims began the same way: Cosmo asks for a node's every note each night its node is
        dirty, the notes of the night before and the new ones, tens of thousands by a
        decade. None when the claims hold more than one key."""
        first = claims[0]
        tally = self._tallies.pop(id(first), None)  # (it holds ``first``: the id is its)
        if tally is None or not tally.begins(claims):
            tally = _Tally(first.key)
        if not tally.extend(claims):
            return None
        self._tallies[id(first)] = tally  # the most recent last
        if len(self._tallies) > _TALLIES:
            self._tallies.popitem(last=False)
        return tally


def _synthesized(claims: list[Claim], mode: str) -> Claim:
    """:meth:`MockLLM.synthesize` of ``claims`` (not empty) in synthesis mode ``mode``,
    counted from the first claim."""
    # (each field read through map: Cosmo asks for a node's every note, hundreds a call)
    set_importance = [i for i in map(_IMPORTANCE, claims) if i is not None]
    importance = max(set_importance) if set_importance else None
    confidence = _mean_confidence(math.fsum(map(_CONFIDENCE, claims)), len(claims))
    keys = set(map(_KEY, claims))
    if len(keys) == 1:
        if mode == "all":
            pos: dict[str, list[int]] = {}
            for i, c in enumerate(claims):
                pos.setdefault(c.value, []).append(i + 1)
            if len(pos) > 1:
                joined = "; ".join(f"{v} @{','.join(map(str, p))}" for v, p in pos.items())
                return _one_key_answer(claims[-1], importance, confidence, value=joined)
        if mode == "latest":
            value = claims[-1].value
        elif mode == "first":
            value = claims[0].value
        else:
            values = list(map(_VALUE, claims))
            counts = Counter(values)
            last_pos = dict(zip(values, range(len(values))))  # (a value's last position)
            value = max(counts, key=lambda v: (counts[v], last_pos[v]))
        stating = [c for c in claims if c.value == value]
        cat_counts = Counter(c.category for c in stating)
        cat_last = {c.category: i for i, c in enumerate(stating)}
        category = max(cat_counts, key=lambda c: (cat_counts[c], cat_last[c]))
        return _one_key_answer(stating[-1], importance, confidence, category=category)
    topic = _common_prefix([c.topic for c in claims]) or "misc"
    subjects = {c.subject for c in claims}
    # claims that carry their sentence (text mode): the generalization says them all
    said = list(dict.fromkeys(t for t in (c.attr("text") for c in claims) if t))
    return Claim(
        key=topic,
        value="; ".join(sorted({c.value for c in claims})),
        category="meta",
        importance=importance,
        confidence=confidence,
        subject=subjects.pop() if len(subjects) == 1 else "owner",
        attrs=(("text", " ".join(said)),) if said else (),
    )


def _mean_confidence(total: float, n: int) -> float:
    """synthesize()'s confidence: the mean of the claims' (their sum ``total`` correctly
    rounded), within [0, 1]."""
    return min(1.0, max(0.0, total / n))


def _one_key_answer(
    last: Claim, importance: float | None, confidence: float, **chosen: Any
) -> Claim:
    """synthesize()'s claim for claims of one key: ``last``, the last claim stating the
    chosen value, with the importance and confidence over them all and the ``chosen``
    fields (the value or the category)."""
    return dataclasses.replace(
        last, importance=importance, confidence=confidence, noise=False, **chosen
    )


# synthesize() keeps a tally of a call's claims from this many on (fewer cost less to count
# again), for at most _TALLIES lists of claims, the least recently asked dropped first
_TALLY_MIN_CLAIMS = 32
_TALLIES = 8192
# every float is a whole multiple of 2**-1074: sums of them in these units are exact
_FIXED_POINT = 1 << 1074


class _Tally:
    """What :meth:`MockLLM.synthesize` reads of a list of claims of one key, counted one
    claim at a time, so a longer list that begins with the same claims is counted from where
    the shorter one ended: the claims seen, the highest importance set, the exact sum of the
    confidences (in units of 2**-1074: divided once, it is ``math.fsum``'s correctly rounded
    sum), and per value its count, last position, last claim and its categories' counts and
    last positions. The answers are those of the direct count (tests/engine/test_mockllm.py)."""

    __slots__ = ("key", "seen", "importance", "confidence", "values")

    def __init__(self, key: str) -> None:
        self.key = key
        self.seen: list[Claim] = []
        self.importance: float | None = None
        self.confidence = 0
        # value -> [count, last position, last claim, {category: [count, last position]}]
        self.values: dict[str, list[Any]] = {}

    def begins(self, claims: list[Claim]) -> bool:
        """Whether ``claims`` begins with the claims counted so far."""
        n = len(self.seen)
        return len(claims) >= n and claims[:n] == self.seen

    def extend(self, claims: list[Claim]) -> bool:
        """Count the claims of ``claims`` past those seen; False (and nothing counted) when
        one of them has another key."""
        new = claims[len(self.seen) :]
        if any(c.key != self.key for c in new):
            return False
        values = self.values
        for i, c in enumerate(new, start=len(self.seen)):
            if c.importance is not None and (
                self.importance is None or c.importance > self.importance
            ):
                self.importance = c.importance
            num, den = c.confidence.as_integer_ratio()
            self.confidence += num * (_FIXED_POINT // den)
            entry = values.get(c.value)
            if entry is None:
                entry = values[c.value] = [0, i, c, {}]
            entry[0] += 1
            entry[1], entry[2] = i, c
            cat = entry[3].get(c.category)
            if cat is None:
                entry[3][c.category] = [1, i]
            else:
                cat[0] += 1
                cat[1] = i
        self.seen.extend(new)
        return True

    def answer(self, mode: str) -> Claim:
        """synthesize()'s claim in ``mode`` (one of "majority", "latest", "first")."""
        values = self.values
        if mode == "latest":
            value = self.seen[-1].value
        elif mode == "first":
            value = self.seen[0].value
        else:  # the most stated, ties to the value seen last
            value = max(values, key=lambda v: (values[v][0], values[v][1]))
        last: Claim = values[value][2]
        cats = values[value][3]
        category = max(cats, key=lambda c: (cats[c][0], cats[c][1]))
        confidence = _mean_confidence(self.confidence / _FIXED_POINT, len(self.seen))
        return _one_key_answer(last, self.importance, confidence, category=category)


_IMPORTANCE, _CONFIDENCE = operator.attrgetter("importance"), operator.attrgetter("confidence")
_KEY, _VALUE = operator.attrgetter("key"), operator.attrgetter("value")


def _common_prefix(topics: Sequence[str]) -> str:
    parts = [t.split(".") for t in topics if t]
    if not parts or len(parts) < len(topics):
        return ""
    out = []
    for segs in zip(*parts):
        if len(set(segs)) != 1:
            break
        out.append(segs[0])
    return ".".join(out)
