"""A real model through the workbench: ``--llm openai:...`` runs against the fake server of
tests/openai_fake.py, ``--llm replay:PATH`` gives the same result files byte for byte, the
model's spec enters the run's definition (never the API key), and mock-only options beside
a model are one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import memsim
from memsim.engine.errors import ParamError
from memsim.workbench.cli.main import main
from memsim.workbench.runs.execution import as_overrides
from tests.openai_fake import FakeOpenAI

SECRET = "sk-test-secret-0123456789"

SCENARIO = """\
name: model-check
description: facts stated as text a model can read, one of them changed
horizon: 10
episodes:
  - {id: e1, time: 0, text: "My owner name is Dana.", claims: [{key: owner.name, value: Dana}]}
  - {id: e2, time: 0.1, text: "My owner city is Boston.",
     claims: [{key: owner.city, value: Boston}]}
  - {id: e3, time: 0.2, text: "chat about the weather",
     claims: [{key: chat.w, value: rain, noise: true}]}
  - {id: e4, time: 2, text: "My owner city is Denver.", claims: [{key: owner.city, value: Denver}]}
  - {id: e5, time: 2.1, text: "Call me Dana, thanks so much for all the help today"}
queries:
  - {id: q1, time: 1, text: "What is my owner city?", keys: [owner.city], k: 2}
  - {id: q2, time: 5, text: "What is my owner city?", keys: [owner.city], k: 2}
  - {id: q3, time: 5, text: "What is my owner name?", keys: [owner.name], k: 2}
"""

RESULT_FILES = ("queries.parquet", "footprint.parquet", "summary.json")


@pytest.fixture
def server():
    with FakeOpenAI() as srv:
        yield srv


@pytest.fixture
def scenario(tmp_path):
    path = tmp_path / "model-check.yaml"
    path.write_text(SCENARIO)
    return str(path)


def _run(policy: str, scenario: str, llm: str, out: Path) -> Path:
    assert main(["run", "--policy", policy, "--scenario", scenario, "--quiet", "--llm", llm,
                 "--out", str(out)]) == 0  # fmt: skip
    (manifest,) = out.rglob("manifest.json")
    return manifest.parent


@pytest.mark.parametrize("policy", ["keep-all", "pai", "cosmo"])
def test_a_replayed_run_gives_the_live_runs_bytes(server, scenario, tmp_path, policy, capsys):
    cache = tmp_path / "cache"
    live = _run(
        policy, scenario, f"openai:{server.base_url},model=fake,cache={cache}", tmp_path / "a"
    )
    printed = capsys.readouterr().out
    assert "model calls" in printed and "faults: none" in printed
    asked = sum(server.requests.values())
    replayed = _run(policy, scenario, f"replay:{cache}", tmp_path / "b")
    assert sum(server.requests.values()) == asked  # nothing asked of the server
    for name in RESULT_FILES:
        assert (live / name).read_bytes() == (replayed / name).read_bytes(), name
    a, b = (json.loads((p / "manifest.json").read_text()) for p in (live, replayed))
    assert a["llm_usage"] == b["llm_usage"]
    assert a["definition"]["llm"] == [
        ["endpoint", f"openai:{server.base_url},model=fake,cache={cache}"]
    ]
    assert b["llm"]["llm"] == "replay" and b["llm"]["model"] == "fake"
    summary = json.loads((live / "summary.json").read_text())
    assert summary["llm_calls"] == a["llm_usage"]["total"]["calls"] > 0
    assert summary["llm_tokens_in"] > 0 and summary["llm_faults"] == 0


def test_a_model_run_never_shares_a_mock_runs_cache_entry(server, scenario, tmp_path):
    mock = _run("keep-all", scenario, "faults.embed_fail=0", tmp_path / "a")
    spec = f"openai:{server.base_url},model=fake,cache={tmp_path / 'c'}"
    model = _run("keep-all", scenario, spec, tmp_path / "b")
    assert mock.name.split("-")[-1] != model.name.split("-")[-1]  # (the definition's key)


def test_the_api_key_reaches_no_result_or_cache_file(server, scenario, tmp_path, monkeypatch):
    monkeypatch.setenv("MEMSIM_OPENAI_API_KEY", SECRET)
    _run(
        "pai",
        scenario,
        f"openai:{server.base_url},model=fake,cache={tmp_path / 'c'}",
        tmp_path / "a",
    )
    assert f"Bearer {SECRET}" in server.authorization
    files = [f for f in tmp_path.rglob("*") if f.is_file()]
    assert len(files) > 5
    for f in files:
        assert SECRET.encode() not in f.read_bytes(), f


def test_the_api_takes_a_model_spec(server, scenario, tmp_path):
    spec = f"openai:{server.base_url},model=fake,cache={tmp_path / 'c'}"
    live = memsim.run("keep-all", scenario, llm=spec)
    again = memsim.run("keep-all", scenario, llm=f"replay:{tmp_path / 'c'}")
    assert live.equals(again)
    assert as_overrides(spec) == (("endpoint", spec),)
    with pytest.raises(ParamError, match="expected overrides or openai"):
        as_overrides("faults.embed_fail=0.1")


@pytest.mark.parametrize(
    "extra, message",
    [
        (
            ["--llm", "faults.embed_fail=0.1"],
            "--llm faults.embed_fail=0.1: an option of the mock LLM",
        ),
        (
            ["--llm", "modes.synthesis=latest"],
            "--llm modes.synthesis=latest: an option of the mock",
        ),
        (["--llm", "text_embedder=hashed"], "--llm text_embedder=hashed: an option of the mock"),
        (["--llm", "replay:/tmp"], "a second model"),
    ],
)
def test_a_mock_option_beside_a_model_is_a_one_line_error(
    scenario, tmp_path, capsys, extra, message
):
    args = ["run", "--policy", "keep-all", "--scenario", scenario, "--quiet"]
    assert main([*args, "--llm", "openai:http://127.0.0.1:9/v1,model=m", *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_a_request_missing_from_a_replay_cache_is_a_one_line_error(
    server, scenario, tmp_path, capsys
):
    cache = tmp_path / "cache"
    _run("keep-all", scenario, f"openai:{server.base_url},model=fake,cache={cache}", tmp_path / "a")
    capsys.readouterr()
    args = ["run", "--policy", "pai", "--scenario", scenario, "--quiet", "--llm", f"replay:{cache}"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "no recorded reply for chat" in err and str(cache) in err and err.count("\n") == 1


def test_invalid_replies_are_counted_and_reported(server, scenario, tmp_path, capsys):
    server.plan += [
        {"task": "extract", "content": "no JSON here"},
        {"task": "extract", "status": 400},
    ]
    llm = f"openai:{server.base_url},model=fake,cache={tmp_path / 'c'},retries=0"
    run = _run("keep-all", scenario, llm, tmp_path / "a")
    out = capsys.readouterr().out
    assert "faults: extract_fail 2" in out and "content is not JSON" in out
    summary = json.loads((run / "summary.json").read_text())
    assert summary["llm_faults"] == 2
    usage = json.loads((run / "manifest.json").read_text())["llm_usage"]
    assert usage["faults"]["extract_fail"] == 2 and len(usage["fault_messages"]) == 2


def test_compare_and_check_take_a_model_and_replay_it(server, scenario, tmp_path, capsys):
    """compare (two processes asking the same requests at once: the reply recorded first
    serves both) and check take the same --llm; the replayed comparison's tables are the
    live one's bytes."""
    cache = tmp_path / "cache"
    live = f"openai:{server.base_url},model=fake,cache={cache}"
    args = ["compare", "--policies", "keep-all,pai", "--scenarios", scenario, "--quiet"]
    args += ["--cache", str(tmp_path / "runs")]
    assert main([*args, "--jobs", "2", "--llm", live, "--out", str(tmp_path / "a")]) == 0
    assert main([*args, "--llm", f"replay:{cache}", "--out", str(tmp_path / "b")]) == 0
    a, b = ((tmp_path / d / "summary.csv").read_text() for d in "ab")
    assert a == b and "llm_tokens_in" in a
    capsys.readouterr()
    check = ["check", "scripted/name-preference", "--policies", "keep-all", "--quiet"]
    assert main([*check, "--llm", live]) in (0, 1)  # (judged: 1 when an expectation fails)
    assert "expectations hold" in capsys.readouterr().out


def test_the_cost_columns_are_the_registrys_llm_usage_group():
    from memsim.engine.metric_registry import METRICS, metric_names
    from memsim.workbench.runs.execution import usage_columns

    usage = {
        "total": {"calls": 3, "tokens_in": 40, "tokens_out": 5, "latency_ms": 7},
        "faults": {"extract_fail": 1, "embed_fail": 0, "invalid_answer": 2},
    }
    columns = usage_columns(usage)
    group = metric_names("llm_usage")
    assert tuple(columns) == tuple(c for c in group if not c.startswith("llm_embed_"))
    assert columns == {
        "llm_calls": 3,
        "llm_tokens_in": 40,
        "llm_tokens_out": 5,
        "llm_latency_ms": 7,
        "llm_faults": 3,
    }
    assert {METRICS[c].level for c in columns} == {"run"}
