"""Seeded synthetic streams: facts mentioned over time, some changing, some chatter, queries.

Everything random comes from one ``numpy.random.Generator`` seeded explicitly, drawn in a
fixed order with vectorized calls, so the same (params, seed) gives a byte-identical stream
(same pickle) and a 100,000-episode year is generated in seconds.

The world: ``facts`` fact keys grouped into ``topics`` (key ``tNN.fNNNN``, topic ``tNN``),
each about the owner or one of ``people`` other people. Each fact is introduced once and then
mentioned again; how often follows a Zipf law over facts (``mention_skew``), and when follows
one of three patterns: a Poisson process (uniform times), bursts around a few centres, or
spaced repetition (geometrically growing gaps). A repeat mention changes the fact's value with
probability ``change_share`` (a contradiction of what was said before). A share
``noise_share`` of all episodes is one-off chatter nobody asks about (``noise=True``).

Queries come at uniform times after ``query_start``; each asks about one fact introduced
before it, chosen by popularity (Zipf, ``query_skew``), by recency (a fact mentioned in the
last ``recent_days``) or by change (a fact whose value changed); the query's ``group`` says
which. The mock LLM's bands and faults travel in ``Stream.meta`` (``bands``, ``faults``).

Text mode (spec option ``text=1``): every episode is a sentence rendered from paraphrase
templates (scenarios.text_templates), each claim carries it as its ``text`` attribute, each
question is a natural question, and the meta tells the mock to embed claims and questions
from their sentences with a real text embedder (``claim_text``, ``text_embedder``) and holds
each question's value-aware follow-up (``followups``, what the asking user says under
``modes.query_value``). Keys, values, times and queries are those of the same stream
without text: the template draws come from a generator of their own.
"""

from __future__ import annotations

import dataclasses
import gc
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from memsim.engine import limits
from memsim.engine.embed import TEXT_STREAM_EMBEDDER
from memsim.engine.errors import ParamError, ScenarioError, UnknownIdError
from memsim.engine.events import Claim, Episode, Query, Stream
from memsim.engine.llm import Bands, Faults
from memsim.engine.params import Params, coerce, param
from memsim.engine.sources import ScenarioSource

from . import text_templates

CATEGORIES = ("fact", "preference", "relationship", "decision", "event", "sentiment", "reminder")
_CATEGORY_WEIGHTS = np.array([0.35, 0.2, 0.15, 0.1, 0.1, 0.05, 0.05])
PEOPLE = ("alex", "sam", "maria", "li", "noor", "tomas", "aiko", "ravi")
CHATTER_TOPICS = 50

# Words of a fact's surface form in question text: a user asks "what is my cobalt harbor?",
# never "what is my t11.f0112?" (the key), so a keyword match on the question cannot find
# the episode that states the fact (its text names the key); only embeddings can.
_SURFACE_A = tuple(
    "amber brisk cobalt dusty eager frosty golden hollow ivory jolly keen lunar misty nimble "
    "olive plain quiet rustic silver tidy".split()
)
_SURFACE_B = tuple(
    "anchor bridge canyon delta ember forest garden harbor island jungle kettle lantern "
    "meadow nest orchard pillar quarry river summit tower".split()
)


def surface_form(topic: int, fact: int) -> str:
    """How a user names fact ``fact`` of topic ``topic`` in a question (two plain words;
    facts of one topic share the first word, as related facts share vocabulary)."""
    return f"{_SURFACE_A[topic % len(_SURFACE_A)]} {_SURFACE_B[fact % len(_SURFACE_B)]}"


@dataclass(frozen=True)
class SyntheticParams(Params):
    """Parameters of a synthetic stream (defaults: the ``steady`` profile's base)."""

    horizon: float = param(180.0, lo=1.0, hi=limits.MAX_DAYS, doc="simulated days")
    episodes: int = param(
        2000, lo=1, hi=limits.MAX_EPISODES, doc="episodes in total, chatter included"
    )
    queries: int = param(200, lo=0, hi=limits.MAX_QUERIES, doc="queries in total")
    facts: int = param(150, lo=1, hi=limits.MAX_FACTS, doc="distinct fact keys")
    topics: int = param(
        15, lo=1, hi=limits.MAX_TOPICS, doc="topics the facts are grouped in (related facts)"
    )
    people: int = param(4, lo=0, hi=len(PEOPLE), doc="other people facts can be about")
    other_subject_share: float = param(0.2, lo=0.0, hi=1.0, doc="share of facts about other people")
    noise_share: float = param(
        0.2, lo=0.0, hi=1.0, hi_open=True, doc="share of episodes that are chatter"
    )
    mention_skew: float = param(
        1.0, lo=0.0, doc="Zipf exponent of how often each fact is mentioned"
    )
    burst_share: float = param(0.2, lo=0.0, hi=1.0, doc="share of facts mentioned in bursts")
    spaced_share: float = param(0.1, lo=0.0, hi=1.0, doc="share of facts mentioned at growing gaps")
    bursts: int = param(3, lo=1, hi=limits.MAX_BURSTS, doc="bursts per bursty fact")
    burst_days: float = param(2.0, lo=0.0, lo_open=True, doc="mean spread of a burst (days)")
    spacing_growth: float = param(
        2.0, lo=1.0, lo_open=True, doc="gap growth factor of spaced facts"
    )
    change_share: float = param(
        0.1, lo=0.0, hi=1.0, doc="share of repeat mentions that change the value"
    )
    mention_span: float = param(
        1.0,
        lo=0.0,
        hi=1.0,
        lo_open=True,
        doc="facts are mentioned within this share of the horizon",
    )
    low_confidence_share: float = param(
        0.2, lo=0.0, hi=1.0, doc="share of mentions with confidence < 0.8"
    )
    query_start: float = param(
        0.1, lo=0.0, hi=1.0, hi_open=True, doc="queries begin after this share of the horizon"
    )
    query_skew: float = param(1.0, lo=0.0, doc="Zipf exponent of query popularity over facts")
    ask_recent: float = param(
        0.2, lo=0.0, hi=1.0, doc="share of queries about a recently mentioned fact"
    )
    recent_days: float = param(7.0, lo=0.0, lo_open=True, doc="how recent 'recent' is (days)")
    ask_changed: float = param(
        0.2, lo=0.0, hi=1.0, doc="share of queries about a fact whose value changed"
    )
    k: int = param(10, lo=1, hi=limits.MAX_K, doc="results asked of each query")
    chatter_confidence: float = param(
        0.5,
        lo=0.0,
        hi=1.0,
        doc="extraction confidence chatter claims carry (docs/mock-llm.md: a real extractor "
        "is unsure of small talk, but not always)",
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.burst_share + self.spaced_share > 1:
            raise ParamError(
                f"SyntheticParams: burst_share + spaced_share = "
                f"{self.burst_share + self.spaced_share:g} exceeds 1"
            )
        if self.ask_recent + self.ask_changed > 1:
            raise ParamError(
                f"SyntheticParams: ask_recent + ask_changed = "
                f"{self.ask_recent + self.ask_changed:g} exceeds 1"
            )
        if self.signal_episodes < self.facts:
            raise ParamError(
                f"SyntheticParams: episodes x (1 - noise_share) = {self.signal_episodes} "
                f"fact mentions, fewer than facts={self.facts} (each fact is mentioned once)"
            )

    @property
    def signal_episodes(self) -> int:
        return int(round(self.episodes * (1.0 - self.noise_share)))


@dataclass(frozen=True)
class Profile:
    description: str
    params: tuple[tuple[str, Any], ...] = ()
    faults: tuple[tuple[str, Any], ...] = ()


PROFILES: dict[str, Profile] = {
    "steady": Profile(
        "stable facts mentioned regularly, few changes, little chatter",
        (
            ("change_share", 0.02),
            ("noise_share", 0.1),
            ("spaced_share", 0.2),
            ("burst_share", 0.1),
            ("ask_changed", 0.05),
        ),
    ),
    "churn": Profile(
        "facts change value often; half the queries ask about changed facts",
        (("change_share", 0.5), ("ask_changed", 0.5), ("ask_recent", 0.2)),
    ),
    "noisy": Profile(
        "most episodes are one-off chatter nobody asks about",
        (("noise_share", 0.8), ("episodes", 3000)),
    ),
    "longgap": Profile(
        "facts mentioned in the first 30% of the horizon, asked about after 70%",
        (
            ("mention_span", 0.3),
            ("query_start", 0.7),
            ("ask_recent", 0.0),
            ("ask_changed", 0.1),
            ("spaced_share", 0.0),
            ("burst_share", 0.3),
        ),
    ),
}


def profile_params(name: str, **overrides: Any) -> SyntheticParams:
    if name not in PROFILES:
        raise UnknownIdError(f"unknown synthetic profile {name!r}; known: {', '.join(PROFILES)}")
    return SyntheticParams(**{**dict(PROFILES[name].params), **overrides})


def from_options(profile: str, options: Mapping[str, Any]) -> tuple[SyntheticParams, Bands, Faults]:
    """Params, bands and faults of ``profile`` with spec options (strings or values):
    parameter names, ``bands.NAME`` and ``faults.NAME``."""
    if profile not in PROFILES:
        raise UnknownIdError(f"unknown synthetic profile {profile!r}; known: {', '.join(PROFILES)}")
    fields = {f.name: f for f in dataclasses.fields(SyntheticParams)}
    base = dict(PROFILES[profile].params)
    bands: dict[str, Any] = {}
    faults: dict[str, Any] = dict(PROFILES[profile].faults)
    for name, value in options.items():
        group, dot, field = name.partition(".")
        target, cls, fname = (
            (bands, Bands, field)
            if dot and group == "bands"
            else (faults, Faults, field)
            if dot and group == "faults"
            else (base, SyntheticParams, name)
        )
        known = {f.name: f for f in dataclasses.fields(cls)}
        if fname not in known or (target is base and dot):
            choices = ", ".join(sorted(fields)) + ", bands.NAME, faults.NAME, text"
            raise ScenarioError(f"synthetic:{profile}: unknown option {name!r}; known: {choices}")
        like = known[fname].default
        target[fname] = (
            coerce(f"synthetic:{profile} {name}", like, value) if isinstance(value, str) else value
        )
    return SyntheticParams(**base), Bands(**bands), Faults(**faults)


def generate(
    profile: str | SyntheticParams = "steady",
    seed: int = 0,
    *,
    bands: Bands | None = None,
    faults: Faults | None = None,
    name: str | None = None,
    profile_name: str | None = None,
    text: bool = False,
) -> Stream:
    """A synthetic stream from a profile name or explicit params, deterministic in ``seed``.
    ``profile_name`` labels explicit params that came from a profile (description, meta);
    ``text`` renders it in sentences (text mode, see the module docstring)."""
    if isinstance(profile, str):
        prof_name, p = profile, profile_params(profile)
        faults = faults or Faults(**dict(PROFILES[profile].faults))
    elif isinstance(profile, SyntheticParams):
        prof_name, p = profile_name or "custom", profile
    else:
        raise ScenarioError(
            f"synthetic: expected a profile name or SyntheticParams, got {profile!r}"
        )
    bands, faults = bands or Bands(), faults or Faults()
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ScenarioError(f"synthetic: seed must be an integer >= 0, got {seed!r}")
    rng = np.random.default_rng([int(seed), 0x5CE7])
    world = _world(p, rng)
    mentions = _mentions(p, rng, world)
    noise_t = rng.uniform(0.0, p.horizon, size=p.episodes - p.signal_episodes)
    queries = _queries(p, rng, world, mentions)
    stream_name = name or (
        f"synthetic:{prof_name}" if prof_name != "custom" else "synthetic:custom"
    )
    desc = (
        PROFILES[prof_name].description
        if prof_name in PROFILES
        else "synthetic stream (custom params)"
    )
    meta = (
        ("generator", "synthetic"),
        ("profile", prof_name),
        ("seed", int(seed)),
        ("params", p.to_dict()),
        ("bands", bands.to_dict()),
        ("faults", faults.to_dict()),
    )
    wording = _Wording(p, world, mentions, queries, seed) if text else None
    if wording is not None:
        meta += (
            ("claim_text", True),
            ("text_embedder", TEXT_STREAM_EMBEDDER),
            ("followups", wording.followups),
        )
    # building ~2 objects per event: the cyclic GC would rescan them again and again
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _assemble(
            p, rng, world, mentions, noise_t, queries, stream_name, desc, meta, wording
        )
    finally:
        if enabled:
            gc.enable()


# --------------------------------------------------------------------------- the world


def _zipf_weights(n: int, s: float, rng: np.random.Generator) -> np.ndarray:
    """Zipf weights over n items in a random order (which fact is popular is random)."""
    with np.errstate(over="ignore"):  # a huge exponent: every weight but the first is 0
        w = 1.0 / np.arange(1, n + 1, dtype=np.float64) ** s
    w = w[rng.permutation(n)]
    return w / w.sum()


def _world(p: SyntheticParams, rng: np.random.Generator) -> dict[str, np.ndarray]:
    F = p.facts
    topic = rng.integers(0, p.topics, size=F)
    other = rng.random(F) < p.other_subject_share if p.people else np.zeros(F, bool)
    person = rng.integers(0, max(p.people, 1), size=F)
    subject = np.where(other, person + 1, 0)  # 0 = owner, i = PEOPLE[i-1]
    category = rng.choice(len(CATEGORIES), size=F, p=_CATEGORY_WEIGHTS)
    importance = np.round(rng.beta(2.0, 2.0, size=F), 3)
    popularity = _zipf_weights(F, p.mention_skew, rng)
    # popularity of queries follows the same order (what is talked about is asked about)
    rank = np.argsort(np.argsort(-popularity, kind="stable"), kind="stable")
    with np.errstate(over="ignore"):  # as in _zipf_weights
        ask_weight = 1.0 / (rank + 1.0) ** p.query_skew
    pattern = rng.choice(
        3, size=F, p=[1 - p.burst_share - p.spaced_share, p.burst_share, p.spaced_share]
    )
    span_end = p.mention_span * p.horizon
    intro = rng.uniform(0.0, 0.9 * span_end, size=F)
    return {
        "topic": topic,
        "subject": subject,
        "category": category,
        "importance": importance,
        "popularity": popularity,
        "ask_weight": ask_weight / ask_weight.sum(),
        "pattern": pattern,
        "intro": intro,
        "span_end": np.array(span_end),
    }


def _mentions(
    p: SyntheticParams, rng: np.random.Generator, w: dict[str, np.ndarray]
) -> dict[str, np.ndarray]:
    F, M = p.facts, p.signal_episodes
    counts = 1 + rng.multinomial(M - F, w["popularity"])
    fact = np.repeat(np.arange(F), counts)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    j = np.arange(M) - np.repeat(starts, counts)  # 0 = the introduction
    intro = w["intro"][fact]
    end = float(w["span_end"])
    room = end - intro
    pattern = w["pattern"][fact]

    u = rng.random(M)
    t_poisson = intro + u * room  # given the count, Poisson times are uniform
    # bursty: each fact has `bursts` centres (the first at its introduction); a mention
    # picks one and lands an exponential spread after it
    f_intro = w["intro"]
    centres = f_intro[:, None] + rng.random((F, p.bursts)) * (end - f_intro)[:, None]
    centres[:, 0] = f_intro
    burst_centre = centres[fact, rng.integers(0, p.bursts, size=M)]
    t_burst = burst_centre + rng.exponential(p.burst_days, size=M)
    # spaced: gaps grow by spacing_growth per mention, the last mention at span_end; a fact
    # mentioned very often grows its gaps more gently (at most growth**30 overall)
    c = counts[fact].astype(np.float64)
    log_g = np.log(p.spacing_growth) * np.minimum(1.0, 30.0 / c)
    with np.errstate(over="ignore", invalid="ignore"):
        t_spaced = intro + room * np.expm1(j * log_g) / np.expm1(c * log_g)
        steep = ~np.isfinite(t_spaced)
        if steep.any():  # growth**count beyond float range: the same share, scaled down first
            share = np.exp((j - c) * log_g) * np.expm1(-j * log_g) / np.expm1(-c * log_g)
            t_spaced = np.where(steep, intro + room * share, t_spaced)
    t = np.select([pattern == 0, pattern == 1], [t_poisson, t_burst], t_spaced)
    t = np.where(j == 0, intro, np.minimum(t, end))
    t = np.round(t, 6)

    order = np.lexsort((j, t, fact))  # by fact, then time
    fact, t = fact[order], t[order]
    rank = np.arange(M) - np.repeat(starts, counts)  # rank of the mention within its fact
    change = (rank > 0) & (rng.random(M) < p.change_share)
    cs = np.cumsum(change)
    version = cs - np.repeat(cs[starts], counts)
    low = rng.random(M) < p.low_confidence_share
    confidence = np.round(np.where(low, rng.uniform(0.3, 0.8, M), rng.uniform(0.8, 1.0, M)), 3)
    return {"fact": fact, "time": t, "change": change, "version": version, "confidence": confidence}


def _queries(
    p: SyntheticParams, rng: np.random.Generator, w: dict[str, np.ndarray], m: dict[str, np.ndarray]
) -> dict[str, np.ndarray]:
    Q = p.queries
    by_time = np.argsort(m["time"], kind="stable")
    mt = m["time"][by_time]
    first = float(mt[0])
    lo_t = max(p.query_start * p.horizon, first)
    qt = np.round(np.sort(rng.uniform(lo_t, p.horizon, size=Q)), 6)
    qt = np.maximum(qt, np.nextafter(first, np.inf))  # something has been said before
    mode = rng.choice(3, size=Q, p=[1 - p.ask_recent - p.ask_changed, p.ask_recent, p.ask_changed])
    F = p.facts
    intro = w["intro"]

    # popular: first of 16 Zipf draws already introduced; else the newest mention before qt
    cand = rng.choice(F, size=(Q, 16), p=w["ask_weight"])
    valid = intro[cand] < qt[:, None]
    has = valid.any(axis=1)
    popular = np.where(has, cand[np.arange(Q), valid.argmax(axis=1)], -1)
    before = np.searchsorted(mt, qt, side="left")  # mentions strictly before qt
    newest = m["fact"][by_time][np.maximum(before - 1, 0)]
    popular = np.where(popular >= 0, popular, newest)

    # recent: a mention in [qt - recent_days, qt)
    lo = np.searchsorted(mt, qt - p.recent_days, side="left")
    u = rng.random(Q)
    pick = lo + np.floor(u * (before - lo)).astype(np.int64)
    recent = np.where(before > lo, m["fact"][by_time][np.minimum(pick, len(mt) - 1)], popular)

    # changed: a value change before qt
    ch = by_time[m["change"][by_time]]
    ct = m["time"][ch]
    n_ch = np.searchsorted(ct, qt, side="left")
    u = rng.random(Q)
    cpick = np.floor(u * n_ch).astype(np.int64)
    changed = np.where(
        n_ch > 0,
        m["fact"][ch][np.minimum(cpick, max(len(ch) - 1, 0))] if len(ch) else popular,
        popular,
    )
    fact = np.select([mode == 0, mode == 1], [popular, recent], changed)
    group = np.select(
        [mode == 0, mode == 1, n_ch > 0], [0, 1, 2], 0
    )  # a fallback counts as popular
    group = np.where((mode == 1) & ~(before > lo), 0, group)
    return {"time": qt, "fact": fact, "group": group}


# --------------------------------------------------------------------------- events


def _built(cls: type, fields: tuple[str, ...]):
    """A constructor that skips ``__post_init__`` validation, for events whose fields are
    valid by construction (numbers in range, ids unique): validating 200,000 frozen objects
    one by one would dominate generation time. The tests rebuild every event of generated
    streams through the validating constructor and compare."""
    new = object.__new__

    def make(*values: Any) -> Any:
        obj = new(cls)
        obj.__dict__.update(zip(fields, values))
        return obj

    return make


_CLAIM = _built(Claim, tuple(f.name for f in dataclasses.fields(Claim)))
_EPISODE = _built(Episode, tuple(f.name for f in dataclasses.fields(Episode)))
_QUERY = _built(Query, tuple(f.name for f in dataclasses.fields(Query)))


def _assemble(
    p: SyntheticParams,
    rng: np.random.Generator,
    w: dict[str, np.ndarray],
    m: dict[str, np.ndarray],
    noise_t: np.ndarray,
    q: dict[str, np.ndarray],
    name: str,
    description: str,
    meta: tuple,
    wording: _Wording | None = None,
) -> Stream:
    n_sig, n_noise, Q = len(m["time"]), len(noise_t), len(q["time"])
    subjects = ["owner", *PEOPLE[: p.people]]
    fact_key = [f"t{tp:02d}.f{f:04d}" for f, tp in enumerate(w["topic"].tolist())]
    fact_subject = [subjects[s] for s in w["subject"].tolist()]
    fact_cat = [CATEGORIES[c] for c in w["category"].tolist()]
    fact_imp = w["importance"].tolist()
    surface = [surface_form(tp, f) for f, tp in enumerate(w["topic"].tolist())]

    # one time line: signal episodes, chatter, queries; same-time episodes before queries
    times = np.concatenate([m["time"], np.round(noise_t, 6), q["time"]])
    kind = np.concatenate([np.zeros(n_sig + n_noise, np.int8), np.full(Q, 2, np.int8)])
    order = np.lexsort((np.arange(len(times)), kind, times))
    chatter_imp = np.round(rng.uniform(0.0, 0.3, size=n_noise), 3).tolist()
    chatter_topic = rng.integers(0, CHATTER_TOPICS, size=n_noise).tolist()

    facts, versions, confs = m["fact"].tolist(), m["version"].tolist(), m["confidence"].tolist()
    qfacts, qgroups = q["fact"].tolist(), q["group"].tolist()
    times_l = times.tolist()
    groups = ("popular", "recent", "changed")
    events: list[Any] = []
    e_no = q_no = 0
    for i in order.tolist():
        t = times_l[i]
        if i < n_sig:
            f, v = facts[i], versions[i]
            key, subj = fact_key[f], fact_subject[f]
            said = wording.statements[i] if wording else ""
            claim = _CLAIM(
                key,
                f"value{v}",
                fact_cat[f],
                fact_imp[f],
                subj,
                confs[i],
                False,
                (("text", said),) if wording else (),
            )
            events.append(
                _EPISODE(
                    f"e{e_no:06d}",
                    t,
                    said or f"{subj}: {key} is value{v}",
                    (claim,),
                    "user",
                    f"day{int(t)}",
                )
            )
            e_no += 1
        elif i < n_sig + n_noise:
            c = i - n_sig
            said = text_templates.chatter(chatter_topic[c], c) if wording else ""
            claim = _CLAIM(
                f"chatter{chatter_topic[c]:02d}.c{c:06d}",
                "",
                "sentiment",
                chatter_imp[c],
                "owner",
                p.chatter_confidence,
                True,
                (("text", said),) if wording else (),
            )
            events.append(
                _EPISODE(
                    f"e{e_no:06d}", t, said or f"chatter {c}", (claim,), "user", f"day{int(t)}"
                )
            )
            e_no += 1
        else:
            c = i - n_sig - n_noise
            f = qfacts[c]
            subj = fact_subject[f]
            events.append(
                _QUERY(
                    f"q{q_no:05d}",
                    t,
                    # the user names themself "my", another person by name
                    wording.questions[c]
                    if wording
                    else f"what is {'my' if subj == 'owner' else subj + chr(39) + 's'} "
                    f"{surface[f]}?",
                    (fact_key[f],),
                    (),
                    p.k,
                    "" if subj == "owner" else subj,
                    groups[qgroups[c]],
                )
            )
            q_no += 1
    counts = {
        "episodes": n_sig + n_noise,
        "chatter": n_noise,
        "queries": Q,
        "value_changes": int(m["change"].sum()),
    }
    return Stream(
        tuple(events),
        name=name,
        horizon=float(p.horizon),
        description=description,
        meta=meta + (("counts", counts),),
    )


class _Wording:
    """The sentences of a text-mode stream: each fact mention's statement (by mention, in
    the order of ``_mentions``), each query's question and its value-aware follow-up naming
    the fact's value at the query (the last mention at or before it), by query id. Template
    choices come from a generator of their own, so the stream's other draws do not move."""

    def __init__(
        self,
        p: SyntheticParams,
        w: dict[str, np.ndarray],
        m: dict[str, np.ndarray],
        q: dict[str, np.ndarray],
        seed: int,
    ) -> None:
        rng = np.random.default_rng([int(seed), 0x7E47])
        subjects = ["owner", *PEOPLE[: p.people]]
        facts = [
            text_templates.Fact(tp, f, CATEGORIES[c], subjects[s])
            for f, (tp, c, s) in enumerate(
                zip(w["topic"].tolist(), w["category"].tolist(), w["subject"].tolist())
            )
        ]
        fact, version, time = m["fact"], m["version"], m["time"]
        said = rng.integers(0, 1 << 16, size=len(fact)).tolist()
        asked = rng.integers(0, 1 << 16, size=(len(q["time"]), 2)).tolist()
        self.statements = [
            text_templates.statement(facts[f], v, k)
            for f, v, k in zip(fact.tolist(), version.tolist(), said)
        ]
        # mentions are sorted by fact, then time: the last one of a fact at or before t
        starts = np.searchsorted(fact, np.arange(p.facts), side="left")
        ends = np.searchsorted(fact, np.arange(p.facts), side="right")
        self.questions: list[str] = []
        self.followups: dict[str, str] = {}
        for n, (f, t, (kq, kf)) in enumerate(zip(q["fact"].tolist(), q["time"].tolist(), asked)):
            self.questions.append(text_templates.question(facts[f], kq))
            lo, hi = int(starts[f]), int(ends[f])
            at = lo + int(np.searchsorted(time[lo:hi], t, side="right")) - 1
            if at >= lo:
                self.followups[f"q{n:05d}"] = text_templates.followup(
                    facts[f], int(version[at]), kf
                )


TEXT_OPTION = "text"


def _load_spec(target: str, options: dict[str, Any], seed: int, name: str) -> Stream:
    options = dict(options)
    text = options.pop(TEXT_OPTION, 0)
    if str(text) not in ("0", "1"):
        raise ScenarioError(f"{name}: option text={text!r} must be 0 or 1")
    try:
        params, bands, faults = from_options(target, options)
    except ParamError as e:  # name the spec (unless the message does): the value is in it
        raise ScenarioError(str(e) if str(e).startswith("synthetic:") else f"{name}: {e}") from None
    return generate(
        params,
        seed,
        bands=bands,
        faults=faults,
        name=name,
        profile_name=target,
        text=str(text) == "1",
    )


SOURCE = ScenarioSource(
    "synthetic",
    _load_spec,
    lambda: [(f"synthetic:{n}", p.description) for n, p in PROFILES.items()],
)
