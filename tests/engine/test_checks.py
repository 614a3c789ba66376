"""The conformance checker is itself tested: each deliberately broken fake policy is caught
by the right check, and a correct policy passes them all."""

import numpy as np
import pytest

from memsim.engine import checks
from memsim.engine.events import Forget, Protect, Query, Recover
from memsim.engine.policy import Job, Ranking
from memsim.engine.registry import PolicySpec
from policies.baselines import KeepAll
from tests.engine.test_runner import StubLLM


def stub(seed):
    return StubLLM(seed)


class RisingStrength(KeepAll):
    """Strength grows with time although nothing is accessed."""

    def strength(self, now):
        return self.store.retrievable() * min(1.0, 0.5 + now / 1000.0)


class NaNStrength(KeepAll):
    def strength(self, now):
        s = super().strength(now)
        if len(s):
            s[0] = np.nan
        return s


class MutatesInput(KeepAll):
    """Edits the episodes it is given (they are frozen, but object.__setattr__ gets through)."""

    def ingest(self, episodes, now):
        for e in episodes:
            object.__setattr__(e, "text", e.text + " (seen)")
        return super().ingest(episodes, now)


class UnseededRNG(KeepAll):
    """Adds noise to its scores from an unseeded generator."""

    def recall(self, queries, now):
        out = super().recall(queries, now)
        rng = np.random.default_rng()
        return [Ranking(r.ids, r.scores - rng.random() * 1e-3) for r in out]


class DropsSilently(KeepAll):
    """Loses every third episode without a 'drop' outcome."""

    def ingest(self, episodes, now):
        return super().ingest([e for e in episodes if not e.id.endswith("3")], now)


class RevivesForgotten(KeepAll):
    """Brings forgotten memories back by writing the status column directly."""

    schedule = (Job("revive", 1.0),)

    def maintain(self, now, jobs):
        st = self.store["status"]
        st[st == self.statuses.code("forgotten")] = self.statuses.code("active")
        return []


class BatchSensitive(KeepAll):
    """Records the position of each memory within its ingest batch: batch != one by one."""

    def setup(self):
        self.store.add_column("batch_pos", np.int64, 0)

    def ingest(self, episodes, now):
        n0 = self.store.n
        out = super().ingest(episodes, now)
        self.store["batch_pos"][n0:] = np.arange(self.store.n - n0)
        return out


class AscendingScores(KeepAll):
    def recall(self, queries, now):
        return [
            Ranking(r.ids[::-1].copy(), r.scores[::-1].copy()) for r in super().recall(queries, now)
        ]


class TiesByRow(KeepAll):
    """Breaks score ties by storage order (lower row first) instead of the tie rule, in both
    rankings a recall may use (over every row, and over some rows: KeepAll's)."""

    def rank(self, scores, k, salt):
        return self.topk(scores, k)

    def rank_among(self, rows, scores, k, salt):
        return self.topk(scores, k)  # positions in ascending rows: ties to the lower row


class Unpicklable(KeepAll):
    def setup(self):
        self.hook = lambda x: x


def spec_of(cls, caps=frozenset({"forget"})):
    return PolicySpec(
        f"fake-{cls.__name__.lower()}",
        1,
        f"tests.engine.test_checks:{cls.__name__}",
        capabilities=frozenset(caps),
    )


def failing(cls, caps=frozenset({"forget"})):
    return {
        name for name, msg in checks.run_checks(spec_of(cls, caps), stub).items() if msg is not None
    }


def test_a_correct_policy_passes_every_check():
    assert failing(KeepAll) == set()


@pytest.mark.parametrize(
    "cls, caught_by",
    [
        (RisingStrength, {"check_no_strength_rise_without_access"}),
        (NaNStrength, {"check_strength_finite"}),
        (MutatesInput, {"check_inputs_not_mutated"}),
        (UnseededRNG, {"check_same_seed_same_trace", "check_pickle_round_trip"}),
        (DropsSilently, {"check_provenance_kept"}),
        # the runner stops every run of it (its footprint is counted from the status log)
        (RevivesForgotten, set(checks.CHECKS)),
        (BatchSensitive, {"check_batched_equals_sequential"}),
        (AscendingScores, {"check_recall_contract"}),
        (Unpicklable, {"check_pickle_round_trip"}),
        (TiesByRow, {"check_row_order_invariant"}),
    ],
)
def test_each_broken_policy_is_caught_by_the_right_check(cls, caught_by):
    assert failing(cls) == caught_by


def test_failure_messages_name_the_policy_and_the_problem():
    msgs = checks.run_checks(spec_of(RevivesForgotten), stub)
    msg = msgs["check_terminal_statuses_stay_terminal"]
    assert "fake-revivesforgotten" in msg and "'forgotten'" in msg and "set_status" in msg
    msg = checks.run_checks(spec_of(RisingStrength), stub)["check_no_strength_rise_without_access"]
    assert "rose from" in msg and "without any access" in msg


def test_check_stream_follows_capabilities():
    plain = checks.check_stream()
    assert not any(isinstance(e, (Forget, Protect, Recover)) for e in plain)
    full = checks.check_stream({"forget", "protect", "recover"})
    kinds = {type(e) for e in full}
    assert {Forget, Protect, Recover} <= kinds
    # every user action comes before the pickle split, so the second half stands alone
    assert all(e.time <= checks.SPLIT_AT for e in full if isinstance(e, (Forget, Protect, Recover)))
    assert max(e.time for e in full) < checks.QUIET_FROM and full.horizon == checks.HORIZON
    assert any(len(evs) > 1 for _, kind, evs in full.batches() if kind is not Query)


def test_expected_failures_name_known_checks():
    for (policy_id, check), reason in checks.EXPECTED_FAILURES.items():
        assert check in checks.CHECKS, check
        assert reason.strip(), (policy_id, check)


def test_row_order_check_reverses_rows_but_not_statements_of_one_fact():
    """Same-time episodes about different facts are reversed (the store's rows permute);
    two statements of one fact keep their order (the later one is the current value)."""
    from memsim.engine.events import Claim, Episode, Stream

    def e(i, key):
        return Episode(f"e{i}", 1.0, f"t{i}", (Claim(key, f"v{i}"),))

    evs = (e(1, "a"), e(2, "b"), e(3, "a"), e(4, "c"), Query("q", 2.0, "?", keys=("a",)))
    out = checks._reorder_same_time(Stream(evs, name="s", horizon=3.0))
    assert [ev.id for ev in out.events] == ["e4", "e1", "e2", "e3", "q"]
