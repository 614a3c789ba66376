"""Generative Agents' fast recall (policies/generative_agents.py): the paper variant scores
exactly only the rows that can reach the top k, from kept last uses, recency caps and
importance terms; it must return the rankings and scores of the plain computation
(ReferencePolicy._rank_query over ``_scores``, every live row scored) bit for bit."""

from __future__ import annotations

import types

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memsim.engine.events import Claim, Episode, Forget, Query, Stream
from memsim.engine.llm import Embedded
from memsim.engine.mockllm import MockLLM
from memsim.engine.registry import make
from memsim.engine.runner import run
from policies import generative_agents
from policies.reference import ReferencePolicy

# ---------------------------------------------------------------- kernels

_values = st.sampled_from([0.0, 0.25, 0.5, 1.0, 1e-300, 0.1, 0.7, 3.0])


@given(
    st.lists(st.tuples(_values, _values, _values), min_size=1, max_size=30),
    st.tuples(*[st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.0])] * 3),
    st.data(),
)
def test_score_between_is_the_score_at_the_rows_given(cols, w, data):
    """At any rows, generative_agents_score_between with the candidates' (min, max) gives
    generative_agents_score's numbers (constant components, where it gives 0.5, included)."""
    rec, imp, rel = (np.array(c) for c in zip(*cols))
    want = generative_agents.generative_agents_score(rec, imp, rel, w)
    at = np.array(sorted(data.draw(st.sets(st.integers(0, len(rec) - 1)))), dtype=np.int64)
    spans = [(float(c.min()), float(c.max())) for c in (rec, imp, rel)]
    got = generative_agents.generative_agents_score_between(rec[at], imp[at], rel[at], w, spans)
    assert got.tobytes() == want[at].tobytes()


# ---------------------------------------------------------------- the policy against the plain path


def _plain(pol):
    """The policy with ReferencePolicy._rank_query (every live row scored by ``_scores``)."""
    pol._rank_query = types.MethodType(ReferencePolicy._rank_query, pol)
    return pol


def _same_runs(pid: str, over: dict, stream: Stream) -> None:
    """Run ``stream`` through the fast and the plain recall; the traces (every ranking's ids
    and scores, every outcome) and the final stores must be identical."""
    fast = make(pid, over, llm=MockLLM(seed=0), seed=0)
    plain = _plain(make(pid, over, llm=MockLLM(seed=0), seed=0))
    got, want = run(fast, stream), run(plain, stream)
    assert repr(list(got.content())) == repr(list(want.content()))
    for name in plain.store.columns:
        assert fast.store[name].tobytes() == plain.store[name].tobytes(), name
    assert sum(len(q.ids) > 1 for q in got.queries) > len(got.queries) / 2


def _with_forgets(stream: Stream) -> Stream:
    events, episodes = [], []
    for ev in stream.events:
        events.append(ev)
        if isinstance(ev, Episode):
            episodes.append(ev.id)
        elif isinstance(ev, Query) and len(episodes) > 3 and len(events) % 3 == 0:
            events.append(Forget(id=f"forget-{len(events)}", time=ev.time, episode_id=episodes[-3]))
    return Stream(tuple(events), name=stream.name + "-with-forgets", horizon=stream.horizon)


_PAPER = "generative-agents"
_CODE = "generative-agents-code"


@pytest.mark.parametrize(
    ("pid", "over"),
    [
        (_PAPER, {}),
        (_PAPER, {"reinforce_cosine": 0.9}),  # reinforcements refresh last use at ingest
        (_PAPER, {"retrieval_is_review": False}),
        (_PAPER, {"recency_decay": 1.0}),  # recency constant: 0.5 to every row
        (_PAPER, {"recency_decay": 1e-12}),  # recency under the normal numbers: the full span
        (_PAPER, {"w_recency": 3.0, "w_importance": 0.0}),
        (_PAPER, {"w_relevance": 0.0}),  # relevance no help: ties broken by the seeded keys
        (_CODE, {}),
        (_CODE, {"reinforce_cosine": 0.9}),
        (_CODE, {"retrieval_is_review": False}),
        (_CODE, {"code_rank_order": "newest_first"}),
        (_CODE, {"code_recency_decay": 1.0}),
        (_CODE, {"code_recency_decay": 0.999, "code_w_recency": 5.0}),  # past the front ranks
        (_CODE, {"code_w_relevance": 0.0, "code_rank_order": "newest_first"}),
    ],
)
def test_recall_equals_the_plain_scores_on_synthetic_streams(pid, over):
    """Both variants, with and without user forgets (the code variant then scores every live
    row: the plain path itself)."""
    import scenarios

    steady = scenarios.load("synthetic:steady,episodes=3000,queries=300,horizon=60")
    _same_runs(pid, over, steady)
    churn = _with_forgets(scenarios.load("synthetic:churn,episodes=500"))
    _same_runs(pid, over, churn)


class FewVectorsLLM:
    """Claims embed to one of four fixed unit vectors by key (many relevance ties), the
    query to a fixed fifth."""

    dim = 4
    seed = 0
    _table = np.array(
        [[1, 0, 0, 0], [0.6, 0.8, 0, 0], [0, 0, 1, 0], [0.6, 0, 0.8, 0]], dtype=np.float32
    )

    def extract(self, episode):
        return episode.claims

    def embed(self, items, keys):
        v = np.stack([self._table[int(it.key[1:]) % 4] for it in items])
        return Embedded(v, np.ones(len(items), dtype=bool))

    def embed_query(self, query):
        return np.array([0.8, 0.6, 0, 0], dtype=np.float32)


_step = st.one_of(
    st.tuples(
        st.just("add"),
        st.integers(0, 3),  # key: which vector
        st.sampled_from([None, 0.0, 0.5, 1.0, 0.3]),  # importance
    ),
    st.tuples(st.just("recall"), st.integers(1, 4), st.just(None)),  # k
    st.tuples(st.just("forget"), st.integers(0, 30), st.just(None)),  # episode number
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(_step, st.sampled_from([0.0, 0.0, 0.01, 0.3, 1.0, -0.5])), max_size=40),
    st.sampled_from(
        [
            (_PAPER, {}),
            (_PAPER, {"recency_decay": 0.5}),
            (_PAPER, {"w_importance": 0.0}),
            (_CODE, {}),
            (_CODE, {"code_rank_order": "newest_first"}),
            (_CODE, {"code_recency_decay": 0.5}),
        ]
    ),
    st.booleans(),
    st.sampled_from([1024, 2, 0]),
)
def test_recall_equals_the_plain_scores_step_by_step(steps, variant, forgets, front):
    """Random adds, recalls (and forgets) at times that stay, move on or go back (a recall
    at a time before a row's last use; rows created and retrieved at one time): every
    ranking as the plain computation's, bit for bit."""
    with pytest.MonkeyPatch.context() as mp:  # the code variant's front ranks: few, none
        mp.setattr(generative_agents, "_FRONT_RANKS", front)
        _step_by_step(steps, variant, forgets)


def _step_by_step(steps, variant, forgets) -> None:
    pid, over = variant
    fast = make(pid, over, llm=FewVectorsLLM())
    plain = _plain(make(pid, over, llm=FewVectorsLLM()))
    now, added = 2.0, 0
    for i, ((what, a, b), dt) in enumerate(steps):
        now = max(0.0, now + dt)
        if what == "add":
            c = Claim(key=f"k{a}", value=str(i), importance=b)
            ep = Episode(id=f"e{added}", time=now, text="x", claims=(c,))
            added += 1
            for pol in (fast, plain):
                pol.ingest([ep], now)
        elif what == "forget" and forgets:
            ev = Forget(id=f"f{i}", time=now, episode_id=f"e{a}")
            for pol in (fast, plain):
                pol.forget([ev], now)
        elif what == "recall":
            q = Query(id=f"q{i}", time=now, text="?", keys=("k0",), k=a)
            got, want = fast.recall([q], now)[0], plain.recall([q], now)[0]
            assert got.ids.tolist() == want.ids.tolist()
            assert got.scores.tobytes() == want.scores.tobytes()
        for name in ("last_access", "access_count", "status"):
            assert fast.store[name].tobytes() == plain.store[name].tobytes()


def test_recency_span_is_the_min_and_max_of_every_rows_recency():
    """The extreme recencies from the rows last used longest ago / most recently (and those
    within reach of them) are the min and max of every row's recency, bit for bit: last
    uses in clusters closer than the reach, after ``now`` (clamped to 0 hours), equal."""
    rng = np.random.default_rng(0)
    pol = make("generative-agents", llm=FewVectorsLLM())
    for decay in (0.995, 0.5, 0.9999999, 1.0, 1e-9):
        pol.params = pol.params.replace(recency_decay=decay)
        for _ in range(50):
            n = int(rng.integers(1, 40))
            base = rng.random() * 300
            lu = base + rng.choice([1e-12, 1e-9, 1e-6, 1.0, 100.0]) * rng.random(n)
            now = base + rng.choice([-1.0, 0.0, 1e-9, 0.5, 50.0, 400.0])
            every = pol._recency(now, lu)
            want = (float(every.min()), float(every.max()))
            assert pol._recency_span(now, lu) == want


@pytest.mark.parametrize(
    ("over", "steps"),
    [
        # oldest first (as released): row 0 retrieved twice at 1, then row 1 created at 1:
        # both last used at 1, the newer (row 1) ranks first; appended after the retrieved
        # row it would not
        (
            {},
            [(("add", 0, 0.5), 0.0), (("recall", 1, None), 1.0), (("recall", 1, None), 0.0)]
            + [(("add", 2, 0.5), 0.0), (("recall", 2, None), 0.0)],
        ),
        # newest first: row 0 retrieved at 1, when row 1 was created: row 1, the newer, first
        (
            {"code_rank_order": "newest_first"},
            [(("add", 0, 0.5), 0.0), (("add", 2, 0.5), 1.0), (("recall", 1, None), 0.0)]
            + [(("recall", 2, None), 0.0)],
        ),
    ],
)
def test_code_recency_ties_at_one_time_rank_as_the_full_sort(over, steps):
    """Rows used at the same time as the latest row are sorted with every row (the kept
    order's recent end takes only rows used later than every other)."""
    _step_by_step(steps, (_CODE, over), forgets=False)
