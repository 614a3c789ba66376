"""The scorecard: one row per policy, grouped by family, with its quality under every
protocol of a comparison (with intervals), its cost, and how far it is from the clairvoyant.

It is computed from a compare output folder (summary.csv, per_query.parquet, and
timings.csv when present), written as ``scorecard.md`` beside them, drawn as
``scorecard.png`` (``figures.scorecard_figure`` on :func:`scorecard_frame`), printed at the
end of ``./scripts/main.sh`` and kept as the README's headline between two marker lines
(``python -m scripts.headline --write``; a test checks the README says what the results say).

Quality cells are means with a 95% interval (``stats.stratified_interval``: synthetic
profiles are fixed strata, their seeds the independent clusters; LoCoMo conversations are
the clusters of a pooled mean, their seeds replicates averaged first). A cell carries ▲ (▼)
when the policy is significantly better (worse) than keep-all on those rows by
``stats.superiority`` (exact signed-rank test on paired cluster means, Holm over the
policies compared; a variant identical to its parent on every query is shown as ``=
parent`` and left out of the family).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from memsim.engine.metric_registry import metric_direction
from memsim.engine.registry import spec, specs

from ..runs.protocols import DEFAULT, PROTOCOL
from ..stats import (
    ALPHA,
    cluster_ids,
    family,
    identical_variants,
    stratified_interval,
    superiority,
)
from .style import FAMILIES, policy_family
from .tables import markdown_table

START = "<!-- headline:start (python -m scripts.headline --write) -->"
END = "<!-- headline:end -->"

UP, DOWN = "▲", "▼"


@dataclass(frozen=True)
class Column:
    """One quality column: ``metric`` of the ``streams`` family under ``protocol``;
    ``short``: its heading in a terminal."""

    title: str
    short: str
    protocol: str
    streams: str
    metric: str
    digits: int = 3


QUALITY = (
    Column("hit@10", "hit", DEFAULT, "synthetic", "hit"),
    Column("MRR", "mrr", DEFAULT, "synthetic", "mrr"),
    Column("stale above current", "inverted", DEFAULT, "synthetic", "rank_inversion"),
    Column("hit@10 value-aware", "hit:value", "value-aware", "synthetic", "hit"),
    Column("hit@10 measured bands", "hit:bands", "measured-bands", "synthetic", "hit"),
    Column("hit@10 text", "hit:text", "text", "synthetic", "hit"),
    Column("LoCoMo recall@10 at end", "L:end", DEFAULT, "locomo", "recall"),
    Column("LoCoMo +1 d", "L:+1d", "evidence-1d", "locomo", "recall"),
    Column("LoCoMo +7 d", "L:+7d", "evidence-7d", "locomo", "recall"),
    Column("LoCoMo +30 d", "L:+30d", "evidence-30d", "locomo", "recall"),
)

# (metric, title, digits): run-level costs, means over the default protocol's synthetic runs
COST = (
    ("footprint_mean", "memories kept", 0),
    ("stored_bytes_mean", "KiB kept", 0),
    ("llm_calls", "LLM calls", 0),
    ("llm_tokens_in", "tokens in", 0),
    ("llm_tokens_out", "tokens out", 0),
    ("llm_embed_calls", "embed calls", 0),
)
# (metric, title): the clairvoyant gap's two parts, synthetic default protocol
GAP_PARTS = (
    ("gap_retention", "gap: not kept"),
    ("gap_ranking", "gap: ranked out"),
)
LATENCY = ("recall_ms_p95", "recall p95 ms")


def _keys(per_query: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(protocol, stream family) of every row, each family found once per distinct
    scenario."""
    proto = per_query[PROTOCOL] if PROTOCOL in per_query else pd.Series(DEFAULT, per_query.index)
    scenario = per_query["scenario"].astype(str)
    fam = scenario.map({s: family(s) for s in scenario.unique()})
    return proto.to_numpy(), fam.to_numpy()


def scorecard_frame(per_query: pd.DataFrame) -> pd.DataFrame:
    """Long form of the quality part: policy, family, protocol, streams, column, metric,
    mean, ci_low, ci_high, clusters, mark (▲, ▼, ``= parent`` or "")."""
    same = identical_variants(per_query)
    proto, fam = _keys(per_query)
    out = []
    for col in QUALITY:
        rows = per_query[(proto == col.protocol) & (fam == col.streams)]
        if rows.empty or col.metric not in rows or not rows[col.metric].notna().any():
            continue
        marks = _marks(rows, col.metric, same)
        for policy, g in rows.groupby("policy", sort=False):
            mean, lo, hi, n_c = stratified_interval(g, col.metric)
            out.append(
                {
                    "policy": policy,
                    "family": policy_family(str(policy)),
                    "protocol": col.protocol,
                    "streams": col.streams,
                    "column": col.title,
                    "metric": col.metric,
                    "mean": mean,
                    "ci_low": lo,
                    "ci_high": hi,
                    "clusters": n_c,
                    "mark": marks.get(str(policy), ""),
                }
            )
    return pd.DataFrame(out)


def reference_policy(policies: Sequence[str]) -> str | None:
    """The policy the marks compare with: the first baseline in table order (keep-all)."""
    return next((p for p in policies if spec(p).baseline), None)


def _marks(rows: pd.DataFrame, metric: str, same: dict[str, str]) -> dict[str, str]:
    """policy -> ▲ / ▼ / "= parent" / "": significantly better / worse than the reference
    on ``metric`` over these rows' clusters, or identical to its parent."""
    policies = list(dict.fromkeys(rows["policy"].astype(str)))
    reference = reference_policy(policies)
    marks = {v: f"= {p}" for v, p in same.items() if v in policies}
    if reference is None or len(np.unique(cluster_ids(rows))) < 2:
        return marks
    sup = superiority(rows, metric)
    vs = sup[(sup["column"] == reference) & sup["significant"]].set_index("row")
    back = sup[sup["row"] == reference].set_index("column")["share"]
    for p in policies:
        if p in vs.index and p not in marks:
            marks[p] = UP if vs.at[p, "share"] > back.get(p, 0.0) else DOWN
    return marks


def _fmt(value: float | None, digits: int) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:,.{digits}f}"


def _cell(r: pd.Series, digits: int = 3, interval: bool = True) -> str:
    text = _fmt(r["mean"], digits)
    if interval and np.isfinite(r["ci_low"]) and r["ci_low"] != r["ci_high"]:
        text += f" [{_fmt(r['ci_low'], digits)}, {_fmt(r['ci_high'], digits)}]"
    return text + (f" {r['mark']}" if r["mark"] else "")


def _ordered(policies: Sequence[str]) -> list[str]:
    """Policies by family (``FAMILIES`` order), then as compared."""
    rank = {f: i for i, f in enumerate(FAMILIES)}
    return sorted(dict.fromkeys(policies), key=lambda p: rank[policy_family(p)])


def cost_frame(summary: pd.DataFrame, timings: pd.DataFrame | None) -> pd.DataFrame:
    """Per policy: the run-level costs of ``COST`` and the gap parts (means over the default
    protocol's synthetic scenarios) and the recall latency (timings.csv, same runs)."""
    proto = summary[PROTOCOL] if PROTOCOL in summary else pd.Series(DEFAULT, summary.index)
    syn = summary[(proto == DEFAULT).to_numpy() & summary["scenario"].str.startswith("synthetic:")]
    wanted = [m for m, _, _ in COST] + [m for m, _ in GAP_PARTS]
    table = syn[syn.metric.isin(wanted)].groupby(["policy", "metric"])["mean"].mean().unstack()
    if "stored_bytes_mean" in table:
        table["stored_bytes_mean"] = table["stored_bytes_mean"] / 1024
    if timings is not None and len(timings) and LATENCY[0] in timings:
        t_proto = timings[PROTOCOL] if PROTOCOL in timings else pd.Series(DEFAULT, timings.index)
        t = timings[
            (t_proto == DEFAULT).to_numpy() & timings["scenario"].str.startswith("synthetic:")
        ]
        table[LATENCY[0]] = t.groupby("policy")[LATENCY[0]].mean()
    return table


_CONCLUSION = re.compile(r"^(\S+) has higher recall@10 than (\S+) on ")


def robustness_verdicts(robustness: pd.DataFrame, reference: str | None = None) -> dict[str, str]:
    """policy -> how its recall against ``reference`` (default: the first registered
    baseline) fares across the robustness study's mock modes (``memsim robustness``' table):
    per verdict and direction, on how many profiles, e.g. ``robust ▼ 3, fragile ▲ 1``."""
    reference = reference or reference_policy([s.id for s in specs()])
    out: dict[str, dict[str, int]] = {}
    rows = robustness[robustness["metric"] == "recall"]
    for conclusion, verdict in zip(rows["conclusion"].astype(str), rows["verdict"].astype(str)):
        m = _CONCLUSION.match(conclusion)
        if not m or reference not in m.groups():
            continue
        winner, loser = m.groups()
        policy, arrow = (winner, UP) if loser == reference else (loser, DOWN)
        key = "never significant" if verdict == "never significant" else f"{verdict} {arrow}"
        counts = out.setdefault(policy, {})
        counts[key] = counts.get(key, 0) + 1
    return {p: ", ".join(f"{k} {n}" for k, n in sorted(c.items())) for p, c in out.items()}


def scorecard_markdown(
    summary: pd.DataFrame,
    per_query: pd.DataFrame,
    timings: pd.DataFrame | None = None,
    robustness: pd.DataFrame | None = None,
    frame: pd.DataFrame | None = None,
) -> str:
    """The two tables of the scorecard (quality per protocol; cost and the clairvoyant
    gap's parts) with a note on what the intervals and marks rest on; ``frame``: the
    :func:`scorecard_frame` of ``per_query`` when the caller has it already."""
    frame = scorecard_frame(per_query) if frame is None else frame
    policies = _ordered(list(dict.fromkeys(summary["policy"].astype(str))))
    cols = [c for c in QUALITY if c.title in set(frame.get("column", []))]
    rows = []
    for p in policies:
        cells = [p, policy_family(p)]
        for c in cols:
            hit = frame[(frame.policy == p) & (frame.column == c.title)]
            cells.append(_cell(hit.iloc[0], c.digits) if len(hit) else "–")
        rows.append(cells)
    arrows = {c.title: "↑" if metric_direction(c.metric) == "higher" else "↓" for c in cols}
    lines = [
        "**Quality per protocol** (mean [95% interval]; synthetic: means over the four "
        "profiles, hit@10 = recall@10 since a synthetic question asks one fact; LoCoMo: "
        "questions asked at the end of the conversation or N days after their evidence):",
        "",
    ]
    lines += markdown_table(
        ["policy", "family", *(f"{c.title} {arrows[c.title]}" for c in cols)], rows
    )
    cost = cost_frame(summary, timings)
    cost_cols = [(m, t, d) for m, t, d in COST if m in cost]
    gap_cols = [(m, t) for m, t in GAP_PARTS if m in cost]
    verdicts = None if robustness is None else robustness_verdicts(robustness)
    if cost_cols or gap_cols:
        rows = []
        for p in policies:

            def value(metric: str, policy: str = p) -> float:
                ok = policy in cost.index and metric in cost
                return float(cost[metric].get(policy, math.nan)) if ok else math.nan

            cells = [p]
            cells += [_fmt(value(m), d) for m, _, d in cost_cols]
            if LATENCY[0] in cost:
                cells.append(_fmt(value(LATENCY[0]), 2))
            for m, _ in gap_cols:
                cells.append(_fmt(value(m), 3) + (" ‡" if value(m) < 0 else ""))
            if verdicts is not None:
                reference = reference_policy(policies)
                cells.append("(the reference)" if p == reference else verdicts.get(p, "not run"))
            rows.append(cells)
        titles = ["policy", *(f"{t} ↓" for _, t, _ in cost_cols)]
        titles += [f"{LATENCY[1]} ↓"] if LATENCY[0] in cost else []
        titles += [f"{t} ↓" for _, t in gap_cols]
        titles += [] if verdicts is None else ["recall vs keep-all across mock modes"]
        lines += [
            "",
            "**Cost and distance from the clairvoyant** (synthetic, default protocol; memories "
            "and KiB kept: means over time; calls and tokens: per run; recall p95: measured on "
            "the machine that ran it, not reproducible byte for byte; gap: the clairvoyant's "
            "recall at the same footprint minus the policy's, split into what was no longer "
            "kept and what was kept but ranked out; across mock modes: on how many synthetic "
            "profiles `memsim robustness` finds the policy's recall robustly or fragilely "
            "above or below keep-all's, from results/robustness.md, which records its own "
            "run):",
            "",
        ]
        lines += markdown_table(titles, rows)
    lines += ["", _note(frame, per_query)]
    return "\n".join(lines) + "\n"


def _note(frame: pd.DataFrame, per_query: pd.DataFrame) -> str:
    """What the intervals, marks and protocols rest on, in one paragraph."""
    parts = []
    for streams, noun in (("synthetic", "seed x profile"), ("locomo", "conversation")):
        sub = frame[frame.streams == streams] if len(frame) else frame
        if sub.empty:
            continue
        first = sub[sub.column == sub.column.iloc[0]]  # the family's first column
        n = int(first["clusters"].max())
        tested = int((~first["mark"].str.startswith("=")).sum())
        pairs = tested * (tested - 1) // 2
        floor = pairs * 2.0 ** (1 - n)
        attain = (
            f"too few for a mark after Holm over {pairs} pairs (smallest p {2.0 ** (1 - n):.2g})"
            if floor >= ALPHA
            else f"{(first['mark'] == UP).sum()} {UP} and {(first['mark'] == DOWN).sum()} "
            f"{DOWN} in {first.column.iloc[0]}"
        )
        parts.append(f"{streams}: {n} clusters ({noun}), {attain}")
    seeds = sorted(int(s) for s in per_query["seed"].unique())
    return (
        f"Seeds {seeds[0]}-{seeds[-1]}. Protocols (docs/results.md#protocols): `default` asks "
        "value-blind questions, LoCoMo questions one minute after the conversation, with the "
        "mock's assumed similarity bands; each other column changes one choice. Intervals: "
        "t-intervals over independent clusters (synthetic profiles as strata). "
        f"{UP} / {DOWN}: significantly better / worse than keep-all (exact signed-rank test "
        f"on paired cluster means, Holm over every pair of policies, p < {ALPHA}); `= parent`: "
        "identical to its parent on every query, left out of the tests. ‡: negative (the "
        "policy's memories cover several episodes each). " + "; ".join(parts) + "."
    )


def scorecard_console(
    summary: pd.DataFrame,
    per_query: pd.DataFrame,
    timings: pd.DataFrame | None = None,
    frame: pd.DataFrame | None = None,
) -> str:
    """The scorecard for a terminal: means only, one line per policy, then what each
    column is (``frame`` as for :func:`scorecard_markdown`)."""
    frame = scorecard_frame(per_query) if frame is None else frame
    cols = [c for c in QUALITY if c.title in set(frame.get("column", []))]
    cost = cost_frame(summary, timings)
    short = {c.title: c.short for c in cols}
    table = []
    for p in _ordered(list(dict.fromkeys(summary["policy"].astype(str)))):
        row = {"policy": p, "family": policy_family(p)}
        for c in cols:
            hit = frame[(frame.policy == p) & (frame.column == c.title)]
            row[short[c.title]] = _cell(hit.iloc[0], interval=False) if len(hit) else "–"
        if "footprint_mean" in cost:
            row["kept"] = _fmt(cost["footprint_mean"].get(p), 0)
        table.append(row)
    legend = [f"  {short[c.title]}: {c.title} ({c.protocol} protocol, {c.streams})" for c in cols]
    if "footprint_mean" in cost:
        legend.append("  kept: memories kept, mean over time (synthetic, default protocol)")
    legend.append(
        f"  {UP}/{DOWN}: significantly better/worse than keep-all; = parent: identical to it"
    )
    return pd.DataFrame(table).to_string(index=False) + "\ncolumns:\n" + "\n".join(legend)


def read_results(
    folder: Path, robustness: Path | None = None
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame | None, pd.DataFrame | None]:
    """(summary, per-query, timings, robustness) of a compare output folder; timings
    (``timings.csv`` in the folder) and the robustness table (a ``memsim robustness`` csv)
    are None when absent."""
    summary = pd.read_csv(folder / "summary.csv")
    per_query = pd.read_parquet(folder / "per_query.parquet")
    timings = pd.read_csv(folder / "timings.csv") if (folder / "timings.csv").is_file() else None
    robust = pd.read_csv(robustness) if robustness is not None and robustness.is_file() else None
    return summary, per_query, timings, robust


def replace_table(readme: str, table: str) -> str:
    """`readme` with the text between the headline markers replaced by `table`."""
    pattern = re.compile(re.escape(START) + r"\n.*?" + re.escape(END), re.DOTALL)
    if not pattern.search(readme):
        raise ValueError(f"README has no headline markers ({START!r} ... {END!r})")
    return pattern.sub(lambda _: f"{START}\n{table}{END}", readme, count=1)
