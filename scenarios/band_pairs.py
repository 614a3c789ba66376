"""The labelled sentence pairs an embedder's similarity bands are measured on
(``memsim bands``; the shipped file is memsim/engine/data/band_pairs.csv, which
tests/scenarios/test_band_pairs.py checks equals :func:`band_pairs`).

Each pair is made by the synthetic generator's text templates (scenarios.text_templates),
as the text mode says them: a fact drawn like the generator's (topic, fact, category,
subject), statements from random templates. Labels (memsim.engine.bands.LABELS):

- ``paraphrase``: the same fact and value in two different templates;
- ``changed_value``: the same fact, another value (templates drawn independently);
- ``related``: two facts of one topic (their domain word shared);
- ``unrelated``: two facts of different topics;
- ``question_current`` / ``question_stale``: a value-blind question and a statement of the
  fact's current / an older value (one question, both statements);
- ``followup_current`` / ``followup_stale``: the value-aware follow-up naming the current
  value, and the same two statements.
"""

from __future__ import annotations

import csv
import io

import numpy as np

from . import text_templates as tt
from .synthetic import CATEGORIES, PEOPLE

PER_LABEL = 40
TOPICS = 15  # the synthetic profiles' topics
FACTS_PER_TOPIC = len(tt.THINGS)


def _fact(rng: np.random.Generator, topic: int | None = None) -> tt.Fact:
    topic = int(rng.integers(0, TOPICS)) if topic is None else topic
    subject = "owner" if rng.random() < 0.8 else PEOPLE[int(rng.integers(0, 4))]
    category = CATEGORIES[int(rng.integers(0, len(CATEGORIES)))]
    return tt.Fact(topic, int(rng.integers(0, FACTS_PER_TOPIC)), category, subject)


def _other_version(rng: np.random.Generator, version: int) -> int:
    return version + 1 + int(rng.integers(0, 4))  # consecutive value words differ


def band_pairs(per_label: int = PER_LABEL, seed: int = 0) -> list[tuple[str, str, str]]:
    """(label, first sentence, second sentence), ``per_label`` pairs of each label, the
    same for the same arguments."""
    rng = np.random.default_rng([int(seed), 0xBA4D])
    n_st = len(next(iter(tt.RELATIONS.values())).statements)
    out: list[tuple[str, str, str]] = []
    for _ in range(per_label):
        f = _fact(rng)
        v = int(rng.integers(0, 6))
        t1 = int(rng.integers(0, n_st))
        t2 = (t1 + 1 + int(rng.integers(0, n_st - 1))) % n_st
        out.append(("paraphrase", tt.statement(f, v, t1), tt.statement(f, v, t2)))
    for _ in range(per_label):
        f = _fact(rng)
        v = int(rng.integers(0, 6))
        u = _other_version(rng, v)
        t1, t2 = (int(t) for t in rng.integers(0, n_st, size=2))
        out.append(("changed_value", tt.statement(f, v, t1), tt.statement(f, u, t2)))
    for _ in range(per_label):
        f = _fact(rng)
        g = _fact(rng, topic=f.topic)
        while g.index % FACTS_PER_TOPIC == f.index % FACTS_PER_TOPIC:
            g = _fact(rng, topic=f.topic)
        v1, v2, t1, t2 = (int(x) for x in rng.integers(0, n_st, size=4))
        out.append(("related", tt.statement(f, v1, t1), tt.statement(g, v2, t2)))
    for _ in range(per_label):
        f = _fact(rng)
        g = _fact(rng)
        while g.topic == f.topic:
            g = _fact(rng)
        v1, v2, t1, t2 = (int(x) for x in rng.integers(0, n_st, size=4))
        out.append(("unrelated", tt.statement(f, v1, t1), tt.statement(g, v2, t2)))
    for kind in ("question", "followup"):
        for _ in range(per_label):
            f = _fact(rng)
            stale = int(rng.integers(0, 6))
            current = _other_version(rng, stale)
            tq, t1, t2 = (int(x) for x in rng.integers(0, n_st, size=3))
            asked = tt.question(f, tq) if kind == "question" else tt.followup(f, current, tq)
            out.append((f"{kind}_current", asked, tt.statement(f, current, t1)))
            out.append((f"{kind}_stale", asked, tt.statement(f, stale, t2)))
    return out


def band_pairs_csv(per_label: int = PER_LABEL, seed: int = 0) -> str:
    """:func:`band_pairs` as the CSV text of the shipped file (header label,first,second)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(("label", "first", "second"))
    writer.writerows(band_pairs(per_label, seed))
    return buf.getvalue()
