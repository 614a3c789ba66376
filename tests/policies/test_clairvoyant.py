"""The clairvoyant reference (policies/clairvoyant.py): Belady retention of raw memories with
foreknowledge, given the future only because its spec declares ``clairvoyant=True``."""

import pytest

from memsim.engine import registry, runner
from memsim.engine.errors import ParamError, StreamError
from memsim.engine.events import Claim, Episode, Query, make_stream
from memsim.engine.metrics import evaluate
from memsim.engine.truth import GroundTruth


def _ep(i: int, t: float, key: str, value: str = "v") -> Episode:
    return Episode(f"e{i}", t, f"{key} is {value}", claims=(Claim(key=key, value=value),))


def _stream():
    # a needed at t=10 and t=30, b at t=20, c never asked
    events = [
        _ep(1, 1.0, "x.a"),
        _ep(2, 2.0, "x.b"),
        _ep(3, 3.0, "x.c"),
        Query("q1", 10.0, "a?", keys=("x.a",), k=5),
        Query("q2", 20.0, "b?", keys=("x.b",), k=5),
        Query("q3", 30.0, "a?", keys=("x.a",), k=5),
    ]
    return make_stream(events, name="belady", horizon=31.0)


def _run(budget: float | None = None, footprint=None):
    spec = registry.spec("clairvoyant")
    assert spec.clairvoyant and spec not in registry.specs()  # a yardstick, not a competitor
    params = {} if budget is None else {"budget": budget}
    policy = spec.make(params)
    stream = _stream()
    trace = runner.run(policy, stream, footprint=footprint)
    return trace, evaluate(trace, GroundTruth(stream))


def test_unlimited_budget_answers_every_query_and_never_keeps_what_is_never_asked():
    trace, q = _run()
    assert q["recall"].tolist() == [1.0, 1.0, 1.0]
    drops = [o.event for o in trace.outcomes if o.action == "drop"]
    assert drops == ["e3"]


def test_budget_one_evicts_the_memory_needed_furthest_ahead():
    # with room for one: after e2 arrives, a is next needed at q1 (sooner than b at q2), so b
    # goes; recall is then 1 (q1), 0 (q2), 1 (q3)
    trace, q = _run(budget=1)
    assert q["recall"].tolist() == [1.0, 0.0, 1.0]
    assert max(f[1] for f in trace.footprint) == 1


def test_matched_footprint_series_sets_the_budget_over_time():
    # two memories until t=15, then none: q1 answered, q2 and q3 not
    _, q = _run(footprint=[(0.0, 2), (15.0, 0), (30.0, 0)])
    assert q["recall"].tolist() == [1.0, 0.0, 0.0]


def test_bad_inputs_are_one_line_errors_naming_the_value():
    with pytest.raises(ParamError, match="-3"):
        registry.spec("clairvoyant").make({"budget": -3})
    with pytest.raises(ParamError, match=r"does not cover the run \[1.0, 30.0\]"):
        _run(footprint=[(5.0, 2), (30.0, 2)])
    for bad in ((15.0, -1), (15.0, float("nan")), (float("nan"), 2)):
        with pytest.raises(ParamError, match=r"footprint series entry 1 \("):
            _run(footprint=[(0.0, 2), bad, (30.0, 2)])
    no_queries = make_stream([_ep(1, 1.0, "x.a")], name="quiet", horizon=2.0)
    with pytest.raises(StreamError, match="'quiet' has no queries"):
        runner.run(registry.spec("clairvoyant").make(), no_queries)


def test_only_a_clairvoyant_spec_takes_a_footprint_series():
    with pytest.raises(ValueError, match="clairvoyant policy only"):
        runner.run(registry.make("keep-all"), _stream(), footprint=[(0.0, 1)])


class _Peeking:
    """A spec whose policy reads each query's answering episodes (ground truth)."""

    id = "peeking"
    capabilities = frozenset({"forget"})
    clairvoyant = False

    def make(self, params=None, *, llm=None, seed=0):
        from policies.baselines import KeepAll

        class Peek(KeepAll):
            def recall(self, queries, now):
                out = super().recall(queries, now)
                return [r if not q.answers else type(r).empty() for q, r in zip(queries, out)]

        return Peek(None, llm=llm, seed=seed)


def test_the_blindness_check_catches_a_policy_that_reads_query_answers():
    from memsim.engine.checks import check_blind_to_ground_truth, check_stream, poisoned

    stream = check_stream()
    assert poisoned(stream) != stream
    with pytest.raises(AssertionError, match="peeking: reads ground truth"):
        check_blind_to_ground_truth(_Peeking())
