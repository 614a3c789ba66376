"""LoCoMo loader: the miniature file (every quirk), the dev subset, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import scenarios
from memsim.engine.errors import ScenarioError
from scenarios import locomo
from tests.conftest import LOCOMO_DEV

MINI = Path(__file__).resolve().parents[1] / "data" / "locomo-mini.json"


@pytest.fixture(scope="module")
def mini():
    return locomo.load(MINI)


def test_one_episode_per_turn_with_speaker_caption_and_session(mini):
    eps = mini.stream.episodes
    assert len(eps) == 10 and mini.report.turns == 10
    e = {x.id: x for x in eps}
    assert e["mini-a/D1:1"].text == "Ana: Hi Ben! I adopted a dog last week."
    assert e["mini-a/D1:1"].speaker == "Ana" and e["mini-a/D1:1"].claims == ()
    assert e["mini-a/D1:3"].text.endswith(" [image: a photo of a small brown dog on a sofa]")
    assert e["mini-a/D2:2"].conversation == "mini-a/session_2"
    assert mini.report.image_turns == 1


def test_turn_times_follow_session_dates(mini):
    e = {x.id: x for x in mini.stream.episodes}
    # session 2 is 11 May 10:05 am; session 1 8 May 1:56 pm: 2 days 20 h 9 min later
    gap = 2 + (20 * 60 + 9) / 1440
    assert e["mini-a/D1:1"].time == 0.0
    assert e["mini-a/D2:1"].time == pytest.approx(gap, abs=1e-8)
    # turns of a session keep their order, one minute apart
    assert e["mini-a/D1:2"].time - e["mini-a/D1:1"].time == pytest.approx(locomo.TURN_GAP_DAYS)
    assert e["mini-a/D2:3"].time == pytest.approx(gap + 2 * locomo.TURN_GAP_DAYS, abs=1e-8)


def test_queries_groups_and_evidence_repairs(mini):
    q = {x.id: x for x in mini.stream.queries}
    assert q["mini-a/q0"].answers == ("mini-a/D1:3",) and q["mini-a/q0"].group == "single-hop"
    assert q["mini-a/q1"].answers == ("mini-a/D1:1", "mini-a/D2:2")  # "D1:1; D2:2"
    assert (
        q["mini-a/q2"].answers == ("mini-a/D2:3",) and q["mini-a/q2"].group == "temporal"
    )  # "D:2:3"
    assert (
        q["mini-a/q3"].answers == ("mini-a/D2:1",) and q["mini-a/q3"].group == "open-domain"
    )  # "D2:01"
    assert (
        q["mini-a/q5"].answers == ("mini-a/D1:3",) and q["mini-a/q5"].group == "multi-hop"
    )  # D7:1 dropped
    assert q["mini-a/q9"].answers == ("mini-a/D1:2",)  # duplicate dropped
    assert "mini-a/q4" not in q and "mini-a/q6" not in q and "mini-a/q8" not in q
    assert all(x.text and not x.keys for x in q.values())


def test_report_counts_everything_with_reasons(mini):
    r = mini.report
    assert r.samples == 2 and r.sessions == 4 and r.questions == 12
    assert r.queries == 8 and r.unanswerable == 1
    assert dict(r.questions_dropped) == {"no evidence": 1, "no usable evidence": 2}
    assert dict(r.evidence_normalized) == {"split": 1, "stray colon": 1, "zero padded": 1}
    assert dict(r.evidence_dropped) == {"no such turn": 2, "malformed": 1, "duplicate": 1}
    assert r.evidence_kept == 9
    assert r.queries + r.unanswerable + sum(r.questions_dropped.values()) == r.questions
    assert r.sessions_moved == 1 and r.unused_date_keys == 1
    assert any("D:2:3" in x for x in r.examples)
    meta = dict(mini.stream.meta)
    assert meta["locomo_report"]["queries"] == 8
    assert meta["text_embedder"] == "wordllama"  # text streams default to a real embedder
    assert json.dumps(meta)  # manifests store meta as JSON


def test_adversarial_questions_are_kept_apart(mini):
    (u,) = mini.unanswerable
    assert u.sample == "mini-a" and u.adversarial_answer == "Pixel" and u.evidence == ("D1:3",)
    assert all("Ben's dog" not in q.text for q in mini.stream.queries)
    assert dict(mini.stream.meta)["unanswerable"][0]["question"] == "What is Ben's dog called?"


def test_samples_concatenate_on_one_clock_with_prefixed_ids(mini):
    s = mini.stream
    a_end = max(e.time for e in s if e.id.startswith("mini-a/"))
    b_start = min(e.time for e in s if e.id.startswith("mini-b/"))
    assert b_start == pytest.approx(a_end + locomo.SAMPLE_GAP_DAYS)
    # mini-b's session 2 is dated before session 1: moved to right after it
    e = {x.id: x for x in s.episodes}
    assert e["mini-b/D2:1"].time > e["mini-b/D1:2"].time


def test_query_time_after_and_evidence_delay():
    after = locomo.load(MINI, sample="mini-a").stream
    last_turn = max(e.time for e in after.episodes)
    assert all(q.time == pytest.approx(last_turn + locomo.TURN_GAP_DAYS) for q in after.queries)
    delayed = scenarios.load(f"locomo:{MINI},sample=mini-a,query_time=evidence+7")
    e = {x.id: x.time for x in delayed.episodes}
    for q in delayed.queries:
        assert q.time == pytest.approx(max(e[a] for a in q.answers) + 7)
    zero = locomo.load(MINI, sample="mini-a", query_time="evidence+0").stream
    for q in zero.queries:  # asked right after the evidence: the evidence comes first
        idx = zero.events.index(q)
        assert all(
            zero.events.index(next(x for x in zero.episodes if x.id == a)) < idx for a in q.answers
        )


def test_one_sample_and_spec_name():
    spec = f"locomo:{MINI},sample=mini-b,k=3"
    s = scenarios.load(spec)
    assert s.name == spec
    assert {e.id.split("/")[0] for e in s} == {"mini-b"}
    assert all(q.k == 3 for q in s.queries)
    assert locomo.sample_ids(MINI) == ["mini-a", "mini-b"]


def test_normalize_evidence_cases():
    assert locomo.normalize_evidence("D8:6; D9:17") == (
        ["D8:6", "D9:17"],
        [("split", "D8:6; D9:17")],
    )
    assert locomo.normalize_evidence("D:11:26") == (["D11:26"], [("stray colon", "D:11:26")])
    assert locomo.normalize_evidence("D30:05") == (["D30:5"], [("zero padded", "D30:05")])
    assert locomo.normalize_evidence("D") == ([], [("malformed", "D")])
    assert locomo.normalize_evidence(7) == ([], [("malformed", "7")])
    assert locomo.normalize_evidence("D1:2") == (["D1:2"], [])


# ------------------------------------------------------------------ bad input


def _write(tmp_path, data) -> Path:
    p = tmp_path / "bad.json"
    p.write_text(data if isinstance(data, str) else json.dumps(data))
    return p


def _sample():
    return json.loads(MINI.read_text())[:1]


@pytest.mark.parametrize(
    "mutate, path, value",
    [
        (lambda d: d[0].pop("sample_id"), "[0].sample_id", "None"),
        (lambda d: d[0].__setitem__("conversation", []), "[0].conversation", "[]"),
        (
            lambda d: d[0]["conversation"].__setitem__("session_1_date_time", "yesterday"),
            "[0].conversation.session_1_date_time",
            "'yesterday'",
        ),
        (
            lambda d: d[0]["conversation"].__setitem__("session_1_date_time", 20230508),
            "[0].conversation.session_1_date_time",
            "20230508",
        ),
        (
            lambda d: d[0]["conversation"]["session_1"][1].pop("text"),
            "[0].conversation.session_1[1].text",
            "None",
        ),
        (
            lambda d: d[0]["conversation"]["session_1"][1].__setitem__("dia_id", "turn2"),
            "[0].conversation.session_1[1].dia_id",
            "'turn2'",
        ),
        (
            lambda d: d[0]["conversation"]["session_1"][1].__setitem__("dia_id", "D1:1"),
            "[0].conversation.session_1[1].dia_id",
            "'D1:1'",
        ),
        (
            lambda d: d[0]["conversation"].__setitem__("session_2", "text"),
            "[0].conversation.session_2",
            "'text'",
        ),
        (
            lambda d: d[0]["conversation"].pop("session_2_date_time"),
            "[0].conversation",
            "session 2 has no session_2_date_time",
        ),
        (lambda d: d[0].__setitem__("qa", {}), "[0].qa", "{}"),
        (lambda d: d[0]["qa"].__setitem__(0, "what?"), "[0].qa[0]", "'what?'"),
    ],
)
def test_bad_input_names_file_path_and_value(tmp_path, mutate, path, value):
    data = _sample()
    mutate(data)
    p = _write(tmp_path, data)
    with pytest.raises(ScenarioError) as err:
        locomo.load(p)
    msg = str(err.value)
    assert str(p) in msg and path in msg and value in msg, msg


@pytest.mark.parametrize(
    "text, match",
    [("[]", "non-empty list"), ('{"a": 1}', "non-empty list"), ("[{", "not valid JSON")],
)
def test_not_a_locomo_file(tmp_path, text, match):
    with pytest.raises(ScenarioError, match=match):
        locomo.load(_write(tmp_path, text))


def test_missing_file_unknown_sample_and_options(tmp_path):
    with pytest.raises(ScenarioError, match="does not exist"):
        scenarios.load(f"locomo:{tmp_path}/none.json")
    with pytest.raises(ScenarioError, match="unknown sample 'conv-1'; samples: mini-a, mini-b"):
        scenarios.load(f"locomo:{MINI},sample=conv-1")
    with pytest.raises(ScenarioError, match="unknown option 'colour'"):
        scenarios.load(f"locomo:{MINI},colour=red")
    for bad in ("evidence-3", "later", "evidence+x"):
        with pytest.raises(ScenarioError, match="query_time"):
            scenarios.load(f"locomo:{MINI},query_time={bad}")
    for k in ("0", "1000000000000", "1e3", "9" * 5000):  # k is capped as in YAML files
        refusal = r"k: (must be an integer in \[1, 1000000\]|cannot)"
        with pytest.raises(ScenarioError, match=refusal):
            scenarios.load(f"locomo:{MINI},k={k}")


def test_unknown_category_is_dropped_and_counted(tmp_path):
    data = _sample()
    data[0]["qa"].append({"question": "?", "answer": "x", "evidence": ["D1:1"], "category": 9})
    r = locomo.load(_write(tmp_path, data)).report
    assert r.questions_dropped["unknown category"] == 1


# ------------------------------------------------------------------ the dev subset

needs_dev = pytest.mark.skipif(
    not LOCOMO_DEV.is_file(),
    reason=f"LoCoMo dev subset not found at {LOCOMO_DEV} (../shared beside the repo)",
)


@needs_dev
def test_dev_subset_loads_with_its_known_quirks():
    L = locomo.load(LOCOMO_DEV)
    r = L.report
    assert r.samples == 5 and locomo.sample_ids(LOCOMO_DEV) == [
        "conv-26",
        "conv-30",
        "conv-41",
        "conv-42",
        "conv-44",
    ]
    assert r.queries + r.unanswerable + sum(r.questions_dropped.values()) == r.questions
    assert r.evidence_normalized["split"] >= 1  # "D8:6; D9:17" in conv-26
    assert r.evidence_dropped["no such turn"] >= 1  # conv-42 names D10:19
    assert r.evidence_dropped["malformed"] >= 1  # conv-42 has "D"
    assert r.questions_dropped["no evidence"] >= 1
    assert r.unused_date_keys >= 5  # conv-26 has more date keys than sessions
    assert r.unanswerable > 100
    groups = {q.group for q in L.stream.queries}
    assert groups == {"multi-hop", "temporal", "open-domain", "single-hop"}


@needs_dev
def test_dev_subset_sample_stream_is_consistent():
    s = scenarios.load(f"locomo:{LOCOMO_DEV},sample=conv-26")
    eps = s.episodes
    assert len(eps) > 300 and all(e.id.startswith("conv-26/D") for e in eps)
    times = [e.time for e in eps]
    assert times == sorted(times) and times[0] == 0.0
    assert 100 < s.horizon < 400  # May 2023 to late 2023, in days
    ep_ids = {e.id for e in eps}
    assert all(set(q.answers) <= ep_ids and q.time > max(times) for q in s.queries)


@needs_dev
def test_standard_suite_adds_one_stream_per_sample():
    specs = scenarios.suite("standard", locomo_path=str(LOCOMO_DEV))
    loc = [x for x in specs if x.startswith("locomo:")]
    assert loc == [
        f"locomo:{LOCOMO_DEV},sample={s}"
        for s in ("conv-26", "conv-30", "conv-41", "conv-42", "conv-44")
    ]


def test_a_file_with_no_usable_question_is_refused(tmp_path, capsys):
    """Nothing to score (every question dropped) is an input error, not 0 queries and exit 0."""
    from memsim.workbench.cli.main import main

    data = json.loads(MINI.read_text())
    for s in data:
        s["qa"] = [{"question": "who?", "category": 1, "evidence": ["D9:9"]}]
    path = tmp_path / "noq.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ScenarioError, match="no usable question.*dropped: 1 no usable evidence"):
        locomo.load(path, sample=data[0]["sample_id"])
    code = main(["run", "--policy", "keep-all", "--scenario", f"locomo:{path}"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "noq.json" in err, err
