"""memorybank-code follows github.com/zhongwanjun/MemoryBank-SiliconFriend,
memory_bank/memory_retrieval/forget_memory.py at commit
3869efcc2c5847e78353b4c53056903f5d1730a6 (the newer of the file's two stored versions;
HEAD cf61c41, per the issue, does not change it). One test per rule, each naming its
line; the superseded upload 0cc7111 is the parameter value ``variant="upload-0cc7111"``."""

from __future__ import annotations

import math

import numpy as np
import pytest

from memsim.engine.events import Claim, Episode, Query
from memsim.engine.mockllm import MockLLM
from memsim.engine.registry import make
from policies.memorybank import ebbinghaus_as_coded
from policies.reference_claims import OneVectorLLM


def _ep(i: int, t: float) -> Episode:
    return Episode(f"e{i}", t, "x", claims=(Claim("a.b", "1", importance=0.5),))


def _q(t: float, k: int = 1) -> Query:
    return Query(f"q{t}", t, "a?", keys=("a.b",), k=k)


def _made(t: float = 0.0, **params: object):
    pol = make("memorybank-code", dict(params) or None, llm=OneVectorLLM(), seed=0)
    pol.ingest([_ep(0, t)], t)
    return pol


def test_line_36_precedence_makes_a_stronger_memory_fade_faster():
    """forget_memory.py@3869efc:
    line 36 ``return math.exp(-t / 5*S)``: Python evaluates exp(-(t / 5) x S)."""
    assert ebbinghaus_as_coded(np.array([1.0]), np.array([2.0]), 5.0)[0] == pytest.approx(
        math.exp(-1.0 / 5 * 2.0), abs=0.0
    )
    pol = _made()
    assert pol.retention(1.0)[0] == pytest.approx(math.exp(-0.2), abs=1e-15)
    pol.recall([_q(1.0)], 1.0)  # S = 2, t reset
    assert pol.retention(2.0)[0] == pytest.approx(math.exp(-0.4), abs=1e-15)
    assert pol.retention(2.0)[0] < math.exp(-0.2)  # the recalled memory fades faster


def test_line_106_a_new_memory_starts_at_strength_1():
    """forget_memory.py@3869efc:
    line 106 ``memory_strength = dialog.get('memory_strength', 1)``."""
    assert _made().store["memory_strength"][0] == 1.0


def test_lines_69_70_each_recall_adds_1_uncapped_and_resets_the_recall_date():
    """forget_memory.py@3869efc:
    lines 69-70: ``memory_strength += 1``, ``last_recall_date = cur_date``; lines
    49-50 ``memory_level = 3`` is never read, so S has no cap."""
    pol = _made()
    for d in range(1, 6):
        pol.recall([_q(float(d))], float(d))
    assert pol.store["memory_strength"][0] == 6.0
    assert pol.store["last_recall"][0] == 5.0


def test_line_60_t_counts_whole_calendar_days():
    """forget_memory.py@3869efc:
    line 60 ``(d2 - d1).days`` between two dates: made at 0.9, read at 1.1, one day
    has passed (t = 1), and nothing has passed within the day of the mention."""
    pol = _made(0.9)
    assert pol.days_since_recall(1.1)[0] == 1.0
    assert pol.days_since_recall(0.99)[0] == 0.0
    assert pol.retention(0.99)[0] == 1.0


@pytest.mark.parametrize("day", [1.0, 2.0])
def test_line_119_a_memory_is_kept_with_probability_r_at_each_load(day):
    """forget_memory.py@3869efc:
    line 119 ``if random.random() > retention_probability`` forgets: of 4,000
    memories mentioned once (S = 1) the share kept at the load ``day`` days later is
    exp(-day / 5), within 4.5 standard deviations (the draws are seeded: one fixed sample)."""
    n = 4000
    pol = make("memorybank-code", llm=MockLLM(seed=0), seed=0)
    eps = [Episode(f"e{i}", 0.0, f"fact {i}", claims=(Claim(f"t{i}.k", "v"),)) for i in range(n)]
    pol.ingest(eps, 0.0)
    assert pol.store.n == n
    p = math.exp(-day / 5.0)
    kept = 1.0 - len(pol._doomed(day)) / n
    assert abs(kept - p) <= 4.5 * math.sqrt(p * (1 - p) / n), (kept, p)


def test_line_119_the_comparison_is_strict():
    """forget_memory.py@3869efc:
    line 119: forgotten only when the draw EXCEEDS R; a draw equal to R keeps."""
    pol = _made()
    r = float(pol.retention(3.0)[0])
    pol._draws = lambda now, rows: np.full(len(rows), r)
    assert not len(pol._doomed(3.0))
    pol._draws = lambda now, rows: np.full(len(rows), np.nextafter(r, 1.0))
    assert pol._doomed(3.0).tolist() == [0]


def test_lines_49_50_total_date_is_never_read_so_nothing_is_cut_off_at_30_days():
    """forget_memory.py@3869efc:
    lines 49-50 set ``total_date = 30`` and no line reads it: a memory its draws
    keep is still there 200 days after its mention (the superseded upload drops it)."""
    pol = _made()
    pol._draws = lambda now, rows: np.zeros(len(rows))
    assert not len(pol._doomed(200.0))
    upload = _made(variant="upload-0cc7111")
    upload._draws = lambda now, rows: np.zeros(len(rows))
    assert upload._doomed(30.0).tolist() == [0] and not len(upload._doomed(29.0))


def test_lines_98_120_every_dialog_turn_is_its_own_memory():
    """forget_memory.py@3869efc:
    lines 98-120: each (query, response) turn becomes its own Document; nothing
    merges a repeated statement into an older memory (the paper variant's review rule)."""
    pol = _made()
    pol.ingest([_ep(1, 1.0)], 1.0)
    assert pol.store.n == 2
    assert pol.store["memory_strength"].tolist() == [1.0, 1.0]
    paper = make("memorybank", llm=OneVectorLLM(), seed=0)
    paper.ingest([_ep(0, 0.0)], 0.0)
    paper.ingest([_ep(1, 1.0)], 1.0)
    assert paper.store.n == 1


def test_search_ranks_by_similarity_alone():
    """forget_memory.py@3869efc:
    ``search_memory``: ``similarity_search_with_score`` orders by embedding
    similarity; retention decides only what is kept at a load, not the order."""
    pol = make("memorybank-code", llm=OneVectorLLM(), seed=0)
    pol.ingest([_ep(0, 0.0), _ep(1, 0.0)], 0.0)
    pol.recall([_q(1.0, k=1)], 1.0)  # one of them now has S = 2
    live = np.ones(2, dtype=bool)
    sims = np.array([0.3, 0.9])
    assert pol._scores(sims, live, 3.0, 2).tolist() == [0.3, 0.9]
    assert pol.retention(3.0)[0] != pol.retention(3.0)[1]


def test_upload_0cc7111_three_levels_and_the_paper_curve():
    """forget_memory.py@0cc7111:
    line 36 ``math.exp(-t / S)``; lines 52-55 one curve per level S = 1, 2, 3;
    a recall moves a memory one level up, capped at the third."""
    pol = _made(variant="upload-0cc7111")
    for d in range(1, 6):
        pol.recall([_q(float(d))], float(d))
    assert pol.store["memory_strength"][0] == 3.0
    assert pol.retention(7.0)[0] == pytest.approx(math.exp(-2.0 / 3.0), abs=1e-15)


def test_upload_0cc7111_keeps_only_when_the_draw_is_below_r():
    """forget_memory.py@0cc7111:
    line 87 ``if random.random() < retention_probability`` keeps."""
    pol = _made(variant="upload-0cc7111")
    r = float(pol.retention(2.0)[0])
    pol._draws = lambda now, rows: np.full(len(rows), r)
    assert pol._doomed(2.0).tolist() == [0]
