"""``memsim bands``: an embedder's similarity bands on labelled sentence pairs (markdown and
JSON), and with ``--thresholds`` how often each policy's cosine thresholds fire under the
mock's assumed bands and under the measured embedder (docs/mock-llm.md)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from memsim.engine import bands, registry
from memsim.engine.errors import MemsimError
from memsim.engine.llm import DEFAULT_BANDS

from .outputs import writable_file

# the statement labels a rule on two memories meets, and the question labels a search meets
THRESHOLD_LABELS = bands.LABELS[:6]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--embedder",
        default="wordllama",
        help="text embedder to measure: wordllama (default), hashed or minilm (optional extra)",
    )
    p.add_argument(
        "--pairs",
        default=None,
        help="CSV of labelled pairs, header label,first,second (default: the shipped "
        f"{bands.PAIRS_FILE.name}, made by the synthetic generator's text templates)",
    )
    p.add_argument("--out", default=None, help="write the markdown here (default: print it)")
    p.add_argument("--json", default=None, help="write the measurement as JSON here")
    p.add_argument(
        "--thresholds",
        action="store_true",
        help="add how often each policy's cosine thresholds fire, assumed vs measured bands",
    )


def distribution_table(labels: Mapping[str, Mapping[str, float]]) -> list[str]:
    cols = ["n", "mean", "sd", *(f"q{round(q * 100):02d}" for q in bands.QUANTILES)]
    lines = ["| label | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for label, d in labels.items():
        cells = [str(d["n"])] + [f"{d[c]:.3f}" for c in cols[1:]]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def threshold_lines(
    assumed: Mapping[str, np.ndarray], measured: Mapping[str, np.ndarray], embedder: str
) -> list[str]:
    """One table: each policy's rules (policies with the same rules and values as one
    before are named, not repeated), the share of each label's pairs each fires on."""
    head = "| policy | fires | threshold | bands | " + " | ".join(THRESHOLD_LABELS) + " |"
    lines = [head, "|---" * (4 + len(THRESHOLD_LABELS)) + "|"]
    seen: dict[tuple, str] = {}
    same: list[str] = []
    none: list[str] = []
    for spec in registry.specs():
        cls = spec.load()
        if not cls.similarity_rules:
            none.append(spec.id)
            continue
        params = cls.Params()
        signature = tuple((r, r.bounds(params)) for r in cls.similarity_rules)
        if signature in seen:
            same.append(f"{spec.id} (as {seen[signature]})")
            continue
        seen[signature] = spec.id
        for rule, (lo_value, hi_value) in signature:
            lo = f"{'>=' if rule.lo_inclusive else '>'} {lo_value:g}"
            hi = (
                f", {'<=' if rule.hi_inclusive else '<'} {hi_value:g}"
                if hi_value is not None
                else ""
            )
            for name, cos in (("assumed", assumed), (embedder, measured)):
                shares = [
                    f"{rule.passes(params, cos[label]).mean():.2f}"
                    if label.startswith("question_") == (rule.between == "question")
                    else "-"
                    for label in THRESHOLD_LABELS
                ]
                lines.append(
                    f"| {spec.id} | {rule.what} | {lo}{hi} | {name} | " + " | ".join(shares) + " |"
                )
    lines.append("")
    if same:
        lines.append(f"Same rules and values: {', '.join(same)}.")
    lines.append(f"No cosine threshold (ranking by cosine only): {', '.join(none)}.")
    return lines


def report(
    measurement: Mapping[str, Any], pairs_name: str, thresholds: Mapping[str, Any] | None
) -> str:
    emb = measurement["embedder"]
    lines = [
        f"# Similarity bands: {emb}",
        "",
        f"Cosines of {measurement['pairs']} labelled sentence pairs ({pairs_name}) under the "
        f"text embedder `{emb}`: per label the number of pairs, mean, standard deviation and "
        "quantiles. Written by `memsim bands"
        + (f" --embedder {emb}" if emb != "wordllama" else "")
        + (" --thresholds" if thresholds is not None else "")
        + "` (docs/mock-llm.md).",
        "",
        *distribution_table(measurement["labels"]),
        "",
    ]
    if thresholds is not None:
        mock = thresholds["mock"]
        lines += [
            "## The mock's assumed bands",
            "",
            f"The mock's claims embedder at its default bands (paraphrase "
            f"{DEFAULT_BANDS.paraphrase}, changed value {DEFAULT_BANDS.changed_value}, related "
            f"{DEFAULT_BANDS.related}), {mock['n']} sampled pairs per label (follow-up: "
            f"`modes.query_value={bands.VALUE_AWARE}`):",
            "",
            *distribution_table(mock["labels"]),
            "",
            "## What the seeds' thresholds do",
            "",
            "Share of each label's pairs on which a policy's cosine threshold fires: under the "
            f"mock's assumed bands (`assumed`) and under `{emb}` on the pairs above. Rules on two "
            "memories meet the statement labels, a rule on a question and a memory the question "
            "labels (- where a rule does not meet a label).",
            "",
            *thresholds["lines"],
            "",
        ]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    path = Path(args.pairs) if args.pairs else bands.PAIRS_FILE
    writable_file(args.out)
    writable_file(args.json, "--json")
    pairs = bands.read_pairs(path)
    measured = bands.pair_cosines(pairs, args.embedder)
    measurement = {
        "embedder": args.embedder,
        "pairs": len(pairs),
        "labels": {label: bands.distribution(c) for label, c in measured.items()},
    }
    thresholds = None
    if args.thresholds:
        missing = [label for label in THRESHOLD_LABELS if label not in measured]
        if missing:
            raise MemsimError(
                f"{path}: --thresholds needs pairs of every label; none of {', '.join(missing)}"
            )
        n = 400
        mock = bands.mock_cosines(DEFAULT_BANDS, per_label=n)
        thresholds = {
            "mock": {"n": n, "labels": {k: bands.distribution(v) for k, v in mock.items()}},
            "lines": threshold_lines(mock, measured, args.embedder),
        }
    pairs_name = bands.PAIRS_FILE.name if args.pairs is None else str(path)
    text = report(measurement, pairs_name, thresholds)
    if args.json:
        Path(args.json).write_text(json.dumps(measurement, indent=2) + "\n", encoding="utf-8")
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
        print(f"wrote {args.out}" + (f" and {args.json}" if args.json else ""))
    else:
        print(text, end="")
    return 0
