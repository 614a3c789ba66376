"""``memsim bands``: an embedder's bands on the shipped pairs, the shipped WordLlama
measurement, the mock reproducing it, and the thresholds report."""

import json

import numpy as np
import pytest

from memsim.engine import bands, registry
from memsim.engine.embed import ClaimsEmbedder
from memsim.engine.llm import DEFAULT_BANDS, Bands
from memsim.engine.params import Params
from memsim.workbench.cli.main import main
from memsim.workbench.runs.execution import build_llm


def test_the_shipped_measurement_is_what_the_command_writes(tmp_path, capsys):
    out, js = tmp_path / "bands.md", tmp_path / "bands.json"
    assert main(["bands", "--out", str(out), "--json", str(js)]) == 0
    written = json.loads(js.read_text())
    assert written == bands.load_measured("wordllama")
    assert written["pairs"] >= 200
    assert set(written["labels"]) == set(bands.LABELS)
    text = out.read_text()
    assert "| paraphrase | 40 |" in text and "## What the seeds" not in text


def test_measured_bands_keep_their_order_and_separate_current_from_stale_only_when_asked():
    labels = bands.load_measured("wordllama")["labels"]
    mean = {k: v["mean"] for k, v in labels.items()}
    assert mean["unrelated"] < mean["related"] < mean["changed_value"] < mean["paraphrase"]
    # a value-blind question does not tell the current statement from a stale one
    assert abs(mean["question_current"] - mean["question_stale"]) < 0.05
    assert mean["followup_current"] - mean["followup_stale"] > 0.15


def test_the_mock_with_measured_overrides_reproduces_the_measured_bands():
    overrides = bands.measured_band_overrides("wordllama")
    labels = bands.load_measured("wordllama")["labels"]
    assert set(overrides) >= {"bands.paraphrase", "bands.changed_value", "bands.related"}
    got = bands.mock_cosines(Bands(**{k.removeprefix("bands."): v for k, v in overrides.items()}))
    tolerance = {"paraphrase": 0.03, "changed_value": 0.03, "related": 0.03, "unrelated": 0.1}
    for label, tol in tolerance.items():  # (the mock's unrelated centre is 0)
        assert abs(got[label].mean() - labels[label]["mean"]) < tol, label
    for label in ("paraphrase", "changed_value"):  # the bands whose blocks it can widen alone
        assert got[label].std(ddof=1) == pytest.approx(labels[label]["sd"], rel=0.25), label
    # the default mock is far narrower: the measured spreads are not today's
    default = bands.mock_cosines(DEFAULT_BANDS)
    assert default["paraphrase"].std() < 0.5 * got["paraphrase"].std()
    # the overrides are accepted as --llm overrides
    llm = build_llm(0, {}, overrides)
    assert llm.bands.paraphrase == overrides["bands.paraphrase"]


def test_band_sds_left_at_zero_keep_the_embedder_as_it_was():
    a = ClaimsEmbedder(384, Bands(spread=2.0), 0).vector("t1.f1", "v", "item")
    b = ClaimsEmbedder(384, Bands(spread=2.0, paraphrase_sd=0.0), 0).vector("t1.f1", "v", "item")
    assert np.array_equal(a, b)
    wide = bands.mock_cosines(Bands(paraphrase_sd=0.1), per_label=300)["paraphrase"]
    assert wide.std(ddof=1) == pytest.approx(0.1, rel=0.25)
    assert wide.mean() == pytest.approx(0.92, abs=0.02)


def test_thresholds_report_names_every_rule_under_both_bands(capsys):
    assert main(["bands", "--thresholds"]) == 0
    text = capsys.readouterr().out
    for spec in registry.specs():
        for rule in spec.load().similarity_rules:
            assert rule.what in text
    assert "| assumed |" in text and "| wordllama |" in text
    assert "No cosine threshold" in text


def test_every_similarity_rule_names_cosine_fields_of_its_params():
    found = 0
    for spec in registry.specs():
        cls = spec.load()
        params: Params = cls.Params()
        for rule in cls.similarity_rules:
            values = params.to_dict()
            for name in filter(None, (rule.lo, rule.hi)):
                value = values[name]
                assert isinstance(value, float) and -1.0 <= value <= 1.0, (spec.id, name)
            assert rule.between in ("memories", "question")
            found += 1
    assert found >= 10


def _bad(tmp_path, text):
    path = tmp_path / "pairs.csv"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("a,b,c\n", "header must be label,first,second"),
        ("label,first,second\nnope,x,y\n", "label='nope' is unknown"),
        ("label,first,second\nparaphrase,x\n", "expected 3 fields"),
        ("label,first,second\nparaphrase, ,y\n", "first is empty"),
        ("label,first,second\n", "no pairs"),
    ],
)
def test_a_bad_pairs_file_is_one_line_and_exit_2(tmp_path, capsys, content, message):
    assert main(["bands", "--pairs", _bad(tmp_path, content)]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and "pairs.csv" in err


def test_a_missing_file_and_an_unknown_embedder_are_exit_2(tmp_path, capsys):
    assert main(["bands", "--pairs", str(tmp_path / "none.csv")]) == 2
    assert "none.csv" in capsys.readouterr().err
    assert main(["bands", "--embedder", "nope"]) == 2
    assert "unknown embedder 'nope'" in capsys.readouterr().err


def test_thresholds_need_every_label(tmp_path, capsys):
    path = _bad(tmp_path, "label,first,second\nparaphrase,a b,c d\n")
    assert main(["bands", "--pairs", path, "--thresholds"]) == 2
    assert "needs pairs of every label" in capsys.readouterr().err


def test_hashed_embedder_measures_without_a_model(capsys):
    assert main(["bands", "--embedder", "hashed"]) == 0
    assert "# Similarity bands: hashed" in capsys.readouterr().out
