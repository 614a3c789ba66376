"""The one registry of metrics: each metric's meaning, unit, better direction (as in
ann-benchmarks), level (per query or per run) and the workbench views it belongs to. Every
table, figure, significance test, sweep, tuner and report reads directions and names here;
adding a metric is one entry. No heavy imports: the command line reads it at start."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Metric:
    """One metric of the registry: every table, figure, test, sweep and tuner reads its
    direction and meaning here. ``groups``: the workbench's views it belongs to (see
    GROUPS); each view lists its members in registry order."""

    name: str
    description: str  # one line: what the number means
    better: str  # "higher" or "lower"
    level: str  # "query" (one value per query) or "run" (one per run)
    unit: str
    groups: frozenset[str] = frozenset()
    label: str = ""  # short display label (drift tables, metric_label; default: the name)
    # in the report's readable table, shown right after this metric (a reference beside
    # the metric it bounds) instead of at its registry place
    shown_beside: str = ""

    def __post_init__(self) -> None:
        if self.better not in ("higher", "lower"):
            raise ValueError(f"metric {self.name}: better must be higher or lower")
        if self.level not in ("query", "run"):
            raise ValueError(f"metric {self.name}: level must be query or run")
        unknown = self.groups - set(GROUPS)
        if unknown:
            raise ValueError(f"metric {self.name}: unknown groups {sorted(unknown)}")


GROUPS = {
    "scored": "computed by evaluate (per query) or summarize_run (per run)",
    "query": "per-query metrics of the comparison summary (summary.csv)",
    "calibration": "workbench-level query metrics (studies/calibrate.py): a reference",
    "index_audit": "the candidate index's exactness audit in a run's summary (runs.execution)",
    "llm_usage": "an LLM's calls and tokens in a run's summary: a real model's (with latency "
    "and faults; docs/real-models.md) or the metered mock's (with embedding calls, items and "
    "tokens; docs/mock-llm.md)",
    "cost": "the bytes a run's retrievable memories take (runs.execution; docs/results.md)",
    "shown": "columns of the readable comparison table (summary.md)",
    "console": "columns of the terminal's compact table",
    "objective": "what a tuning may optimize",
    "sweep": "a sweep's metrics of each run (per-query ones as the run's mean)",
    "sobol": "the default metrics of a variance-based sensitivity analysis",
    "drift": "the paired tables of a variant against its base",
}


def _m(
    name: str,
    description: str,
    better: str,
    level: str,
    unit: str,
    groups: str,
    label: str = "",
    shown_beside: str = "",
) -> Metric:
    return Metric(
        name, description, better, level, unit, frozenset(groups.split()), label, shown_beside
    )


# Registry order is every group's order (see metric_names); adding a metric is one entry.
METRICS: dict[str, Metric] = {
    m.name: m
    for m in (
        _m(
            "recall",
            "share of the query's units covered by the returned top-k memories",
            "higher",
            "query",
            "share of units",
            "scored query shown console objective sweep sobol drift",
            label="recall@10",
        ),
        _m(
            "hit",
            "1 if any unit is covered by the top-k memories, else 0 (equal to recall on a "
            "query with one unit, as every synthetic query has)",
            "higher",
            "query",
            "0 or 1",
            "scored query shown",
            label="hit@10",
        ),
        _m(
            "mrr",
            "1 / rank of the first memory covering a unit (0 if none)",
            "higher",
            "query",
            "1 / rank",
            "scored query shown objective sweep",
        ),
        _m(
            "ndcg",
            "nDCG@k: gain = units a memory newly covers; ideal = one unit per rank; capped at 1",
            "higher",
            "query",
            "score in [0, 1]",
            "scored query shown",
        ),
        _m(
            "stale",
            "share of returned memories asserting only superseded values of an asked key "
            "(by provenance, or by the value the memory states)",
            "lower",
            "query",
            "share of returned memories",
            "scored query shown console objective sweep sobol drift",
            label="stale@10",
        ),
        _m(
            "rank_inversion",
            "1 if a stale memory (asserting only a superseded value of an asked key, the "
            "test of stale) ranks in the top k above the first memory covering a current "
            "value (one not in the top k ranks below every returned memory), else 0 (also "
            "when nothing is returned); NaN, not counted, unless some asked key both had an "
            "older value before the query and has its current value covered by a "
            "retrievable memory at the query (the test of ranked_out)",
            "lower",
            "query",
            "0 or 1 (its mean: share of counted queries)",
            "scored query shown",
        ),
        _m(
            "needed_forgotten",
            "1 if a memory of a relevant episode existed but none is retrievable at the query",
            "lower",
            "query",
            "0 or 1",
            "scored query shown console objective sweep",
        ),
        _m(
            "ranked_out",
            "share of the query's units a retrievable memory covered but the top k did not "
            "answer (ranked below k, or returned stating a superseded value)",
            "lower",
            "query",
            "share of units",
            "scored query",
        ),
        _m(
            "forgotten",
            "share of the query's units whose covering memories all existed before the "
            "query and none is retrievable at it",
            "lower",
            "query",
            "share of units",
            "scored query",
        ),
        _m(
            "never_kept",
            "share of the query's units no memory ever covered before the query",
            "lower",
            "query",
            "share of units",
            "scored query",
        ),
        _m(
            "bound",
            "recall@k of the clairvoyant at this run's own footprint over time",
            "higher",
            "query",
            "share of units",
            "query calibration shown",
            shown_beside="recall",
        ),
        _m(
            "gap",
            "bound - recall: what raw-memory retention at this footprint could add",
            "lower",
            "query",
            "share of units",
            "query calibration shown",
            shown_beside="bound",
        ),
        _m(
            "gap_retention",
            "bound - (recall + ranked_out): the part of the gap the policy no longer kept "
            "(negative when its memories cover several episodes each: consolidation)",
            "lower",
            "query",
            "share of units",
            "query calibration",
        ),
        _m(
            "gap_ranking",
            "ranked_out: the part of the gap the policy kept but ranked below k (with "
            "gap_retention it sums to gap)",
            "lower",
            "query",
            "share of units",
            "query calibration",
        ),
        _m(
            "footprint",
            "retrievable memories when the query was asked",
            "lower",
            "query",
            "memories",
            "drift",
        ),
        _m(
            "footprint_mean",
            "time-weighted mean number of retrievable memories over [0, horizon]",
            "lower",
            "run",
            "memories",
            "scored shown console objective sweep sobol drift",
            label="mean footprint",
        ),
        _m(
            "footprint_final",
            "retrievable memories at the end of the run",
            "lower",
            "run",
            "memories",
            "scored shown sweep",
        ),
        _m(
            "stored_bytes_mean",
            "mean over the query times of the retrievable memories' bytes: vectors as kept "
            "(rows x dim x itemsize) and texts in UTF-8",
            "lower",
            "run",
            "bytes",
            "cost",
        ),
        _m(
            "stored_bytes_final",
            "bytes of the retrievable memories' vectors and texts at the end of the run",
            "lower",
            "run",
            "bytes",
            "cost",
        ),
        _m(
            "stored_text_bytes_final",
            "UTF-8 bytes of the retrievable memories' texts at the end of the run",
            "lower",
            "run",
            "bytes",
            "cost",
        ),
        _m(
            "noise_retention",
            "share of noise episodes still in a retrievable memory at the end",
            "lower",
            "run",
            "share of noise episodes",
            "scored shown objective sweep drift",
            label="noise kept",
        ),
        _m(
            "index_query_differ_share",
            "share of the audited queries whose top-k differs from the full scan's",
            "lower",
            "run",
            "share of audited queries",
            "index_audit shown",
        ),
        _m(
            "index_decision_differ_share",
            "share of the audited ingest decisions that differ from the full scan's",
            "lower",
            "run",
            "share of audited decisions",
            "index_audit shown",
        ),
        _m(
            "llm_calls",
            "calls the policy made of its LLM: a real model's requests (recorded usage when "
            "replayed), or the mock's calls a real model would be sent (engine.metering)",
            "lower",
            "run",
            "calls",
            "llm_usage shown",
        ),
        _m(
            "llm_tokens_in",
            "prompt tokens of those calls: the server's usage fields, or the mock's prompts "
            "counted with the tokenizer the wordllama wheel ships",
            "lower",
            "run",
            "tokens",
            "llm_usage shown",
        ),
        _m(
            "llm_tokens_out",
            "completion tokens of those calls: the server's usage fields, or the replies a "
            "model would give the mock's answers, counted as the prompts",
            "lower",
            "run",
            "tokens",
            "llm_usage shown",
        ),
        _m(
            "llm_latency_ms",
            "summed latency of those requests (as recorded, so a replay reports the live run's)",
            "lower",
            "run",
            "milliseconds",
            "llm_usage shown",
        ),
        _m(
            "llm_faults",
            "invalid or failed model replies, each counted as the mock's fault of that kind",
            "lower",
            "run",
            "faults",
            "llm_usage shown",
        ),
        _m(
            "llm_embed_calls",
            "embedding calls of the metered mock (embed and embed_query), among llm_calls",
            "lower",
            "run",
            "calls",
            "llm_usage",
        ),
        _m(
            "llm_embed_items",
            "texts the metered mock's embedding calls embedded",
            "lower",
            "run",
            "texts",
            "llm_usage",
        ),
        _m(
            "llm_embed_tokens",
            "tokens of those texts (the real-model adapter's embedding input), in llm_tokens_in",
            "lower",
            "run",
            "tokens",
            "llm_usage",
        ),
    )
}


def metric_names(group: str, level: str | None = None) -> tuple[str, ...]:
    """The names of a group's metrics (of one level, if given), in registry order; the
    report's shown columns put a metric with ``shown_beside`` right after that one."""
    if group not in GROUPS:
        raise KeyError(f"unknown metric group {group!r}; known: {', '.join(GROUPS)}")
    names = [
        m.name
        for m in METRICS.values()
        if group in m.groups and (level is None or m.level == level)
    ]
    if group == "shown":
        beside = [n for n in names if METRICS[n].shown_beside]
        names = [n for n in names if n not in beside]
        for n in beside:
            names.insert(names.index(METRICS[n].shown_beside) + 1, n)
    return tuple(names)


def metric_label(name: str) -> str:
    """The display label of a metric ("recall@10", "hit@10"), its name when it has none
    (KeyError for an unknown name)."""
    if name not in METRICS:
        raise KeyError(f"unknown metric {name!r}; known: {', '.join(METRICS)}")
    return METRICS[name].label or name


def metric_direction(name: str) -> str:
    """ "higher" or "lower": which way a metric is better (KeyError for an unknown name)."""
    if name not in METRICS:
        raise KeyError(f"unknown metric {name!r}; known: {', '.join(METRICS)}")
    return METRICS[name].better
