"""The metric registry: every metric the scorer emits has one entry, each view lists its
metrics in the order the tables and CSVs have always had, and no module of the project
declares a metric's direction outside the registry."""

import ast
import re
from pathlib import Path

import pytest

from memsim.engine import metrics
from memsim.engine.metric_registry import (
    GROUPS,
    METRICS,
    metric_direction,
    metric_label,
    metric_names,
)

ROOT = Path(__file__).resolve().parents[2]
# per-query columns of evaluate that say which query and where it stood, not how it went
CONTEXT_COLUMNS = {"query_id", "time", "group", "k", "n_units", "returned", "evidence_age"}
DIRECTION_WORDS = {"higher", "lower", "max", "min", "maximize", "minimize"}


def test_every_scored_column_has_an_entry():
    scored = [c for c in metrics.COLUMNS if c not in CONTEXT_COLUMNS]
    assert [c for c in scored if c not in METRICS] == []
    assert set(metric_names("scored", level="query")) <= set(scored)


def test_every_summary_metric_of_a_run_has_an_entry():
    execution = (ROOT / "memsim/workbench/runs/execution.py").read_text()
    audit = set(re.findall(r'summary\["(\w+)"\] =', execution))
    assert audit and audit == set(metric_names("index_audit"))
    # summarize_run's keys are pinned against the "scored" run group in test_metrics


# each view's order as the tables, CSVs and command line have always shown it
ORDERS = {
    ("query", None): (
        "recall",
        "hit",
        "mrr",
        "ndcg",
        "stale",
        "rank_inversion",
        "needed_forgotten",
        "ranked_out",
        "forgotten",
        "never_kept",
        "bound",
        "gap",
        "gap_retention",
        "gap_ranking",
    ),
    ("calibration", None): ("bound", "gap", "gap_retention", "gap_ranking"),
    ("index_audit", None): ("index_query_differ_share", "index_decision_differ_share"),
    ("shown", None): (
        "recall",
        "bound",
        "gap",
        "hit",
        "mrr",
        "ndcg",
        "stale",
        "rank_inversion",
        "needed_forgotten",
        "footprint_mean",
        "footprint_final",
        "noise_retention",
        "index_query_differ_share",
        "index_decision_differ_share",
        "llm_calls",
        "llm_tokens_in",
        "llm_tokens_out",
        "llm_latency_ms",
        "llm_faults",
    ),
    ("llm_usage", None): (
        "llm_calls",
        "llm_tokens_in",
        "llm_tokens_out",
        "llm_latency_ms",
        "llm_faults",
        "llm_embed_calls",
        "llm_embed_items",
        "llm_embed_tokens",
    ),
    ("cost", None): ("stored_bytes_mean", "stored_bytes_final", "stored_text_bytes_final"),
    ("console", None): ("recall", "stale", "needed_forgotten", "footprint_mean"),
    ("objective", None): (
        "recall",
        "mrr",
        "stale",
        "needed_forgotten",
        "footprint_mean",
        "noise_retention",
    ),
    ("sweep", "query"): ("recall", "mrr", "stale", "needed_forgotten"),
    ("sweep", "run"): ("footprint_mean", "footprint_final", "noise_retention"),
    ("sobol", None): ("recall", "stale", "footprint_mean"),
    ("drift", "query"): ("recall", "stale", "footprint"),
    ("drift", "run"): ("footprint_mean", "noise_retention"),
    ("scored", None): (
        "recall",
        "hit",
        "mrr",
        "ndcg",
        "stale",
        "rank_inversion",
        "needed_forgotten",
        "ranked_out",
        "forgotten",
        "never_kept",
        "footprint_mean",
        "footprint_final",
        "noise_retention",
    ),
}


@pytest.mark.parametrize("group,level", list(ORDERS))
def test_group_order(group, level):
    assert metric_names(group, level) == ORDERS[group, level]


def test_every_group_is_pinned_and_every_entry_complete():
    assert {g for g, _ in ORDERS} == set(GROUPS)
    for m in METRICS.values():
        assert m.description and m.unit and m.better in ("higher", "lower")


def test_workbench_views_read_the_registry():
    from memsim.workbench import stats
    from memsim.workbench.present import report
    from memsim.workbench.studies import drift, sweep, tune

    assert stats.QUERY_METRICS == ORDERS["query", None]
    assert report.SHOWN == ORDERS["shown", None]
    assert (sweep.QUERY_MEANS, sweep.RUN_METRICS) == (
        ORDERS["sweep", "query"],
        ORDERS["sweep", "run"],
    )
    assert tune.DIRECTIONS == {
        "recall": "maximize",
        "mrr": "maximize",
        "stale": "minimize",
        "needed_forgotten": "minimize",
        "footprint_mean": "minimize",
        "noise_retention": "minimize",
    }
    assert drift.METRICS == (
        ("recall", "recall@10", "higher"),
        ("stale", "stale@10", "lower"),
        ("footprint", "footprint", "lower"),
    )
    assert drift.RUN_METRICS == (
        ("footprint_mean", "mean footprint", "lower"),
        ("noise_retention", "noise kept", "lower"),
    )


def test_labels_name_the_cut_where_a_query_has_one_unit():
    # every synthetic query has one unit, so recall@10 is hit@10 there: both are shown, each
    # under its own name
    assert (metric_label("recall"), metric_label("hit")) == ("recall@10", "hit@10")
    assert metric_label("mrr") == "mrr"  # no label: the name
    assert {"query", "shown"} <= METRICS["hit"].groups


def test_unknown_metric_has_no_direction():
    with pytest.raises(KeyError):
        metric_label("accuracy")
    with pytest.raises(KeyError):
        metric_direction("accuracy")
    with pytest.raises(KeyError):
        metric_names("nonsense")


def _strings(nodes):
    return {n.value for n in nodes if isinstance(n, ast.Constant) and isinstance(n.value, str)}


def _direction_literals(tree):
    """(line, text) of literals pairing a metric's name with a direction word: a dict entry
    ``{"recall": "higher"}`` / ``{"recall": (..., "lower")}``, or a tuple or list holding
    both, ``("stale", "stale@10", "lower")``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values):
                if k is None or not (_strings([k]) & set(METRICS)):
                    continue
                inner = list(ast.walk(v))
                if _strings(inner) & DIRECTION_WORDS:
                    found.append((node.lineno, ast.unparse(k)))
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            names = _strings(node.elts)
            if names & set(METRICS) and names & DIRECTION_WORDS:
                found.append((node.lineno, ast.unparse(node)[:60]))
    return found


def test_no_direction_declared_outside_the_registry():
    registry = ROOT / "memsim/engine/metric_registry.py"
    offenders = []
    for top in ("memsim", "scenarios", "policies"):
        for path in sorted((ROOT / top).rglob("*.py")):
            if path == registry:
                continue
            for line, text in _direction_literals(ast.parse(path.read_text())):
                offenders.append(f"{path.relative_to(ROOT)}:{line}: {text}")
    assert offenders == []


def test_the_scan_finds_a_declared_direction():
    tree = ast.parse('D = {"recall": "maximize"}\nT = (("stale", "stale@10", "lower"),)\n')
    assert len(_direction_literals(tree)) == 2
