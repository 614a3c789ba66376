"""The shipped labelled sentence pairs are what the templates make."""

import csv

from memsim.engine import bands
from scenarios.band_pairs import band_pairs, band_pairs_csv


def test_the_shipped_pairs_file_is_what_the_function_generates():
    assert bands.PAIRS_FILE.read_text(encoding="utf-8") == band_pairs_csv()
    assert bands.read_pairs(bands.PAIRS_FILE) == band_pairs()


def test_pairs_cover_every_label_with_enough_pairs():
    rows = band_pairs()
    assert len(rows) >= 200
    counts = {label: sum(r[0] == label for r in rows) for label in bands.LABELS}
    assert min(counts.values()) >= 25 and set(counts) == set(bands.LABELS)
    for label, first, second in rows:
        assert first != second or label.startswith("question")
        if label == "paraphrase":
            assert first != second


def test_question_pairs_share_the_question_and_differ_in_the_statement():
    rows = band_pairs()
    for kind in ("question", "followup"):
        current = [r for r in rows if r[0] == f"{kind}_current"]
        stale = [r for r in rows if r[0] == f"{kind}_stale"]
        assert [r[1] for r in current] == [r[1] for r in stale]
        assert all(c[2] != s[2] for c, s in zip(current, stale))


def test_the_csv_reads_back_as_written():
    text = band_pairs_csv(per_label=3, seed=5)
    rows = list(csv.reader(text.splitlines()))
    assert tuple(rows[0]) == bands.HEADER and len(rows) == 1 + 3 * len(bands.LABELS)
