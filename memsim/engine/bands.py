"""Similarity bands: what an embedder gives labelled sentence pairs, and what the mock gives.

The mock's claims embedder (memsim.engine.embed.ClaimsEmbedder) places a paraphrase, a
changed value and a related fact at the cosines of its ``Bands``; its defaults are the bands
the seed documents' thresholds assume. Here the same labels are measured on a real text
embedder: :func:`measure` embeds the shipped pairs (``PAIRS_FILE``, made by the synthetic
generator's templates, scenarios/band_pairs.py) and gives each label's distribution;
:func:`mock_cosines` samples the mock's cosines of the same labels under given ``Bands``;
:func:`measured_band_overrides` turns a shipped measurement into ``--llm bands.*`` overrides
that make the mock reproduce the measured centres and spreads (``memsim bands`` writes both).
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .embed import TEXT_EMBEDDERS, ClaimsEmbedder, make_text_embedder
from .errors import MemsimError, UnknownIdError
from .llm import Bands

LABELS = (
    "paraphrase",
    "changed_value",
    "related",
    "unrelated",
    "question_current",
    "question_stale",
    "followup_current",
    "followup_stale",
)
QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)
DATA = Path(__file__).resolve().parent / "data"
PAIRS_FILE = DATA / "band_pairs.csv"
HEADER = ("label", "first", "second")
# the dimension and seed pairs are embedded at (a run's mock LLM: dim 384; WordLlama pads
# its 256 dimensions with zeros, so its cosines do not depend on them)
DIM, SEED = 384, 0
# how much of the current value a mock's value-aware question carries (the value-aware
# protocol's modes.query_value)
VALUE_AWARE = 0.3


def measured_file(embedder: str) -> Path:
    """Where the shipped measurement of ``embedder`` lives."""
    return DATA / f"bands-{embedder}.json"


def read_pairs(path: str | Path) -> list[tuple[str, str, str]]:
    """(label, first, second) rows of a pairs CSV; a one-line MemsimError naming the file,
    line, field and value for a missing file, another header, an unknown label or an empty
    sentence."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise MemsimError(f"{path}: cannot read the pairs file ({e.__class__.__name__})") from None
    rows = list(csv.reader(text.splitlines()))
    if not rows or tuple(rows[0]) != HEADER:
        got = ",".join(rows[0]) if rows else "(empty file)"
        raise MemsimError(f"{path}: line 1: header must be {','.join(HEADER)}, got {got!r}")
    out = []
    for line, row in enumerate(rows[1:], start=2):
        if len(row) != 3:
            raise MemsimError(f"{path}: line {line}: expected 3 fields, got {len(row)}")
        label, first, second = row
        if label not in LABELS:
            raise MemsimError(
                f"{path}: line {line}: label={label!r} is unknown; known: {', '.join(LABELS)}"
            )
        for name, value in (("first", first), ("second", second)):
            if not value.strip():
                raise MemsimError(f"{path}: line {line}: {name} is empty")
        out.append((label, first, second))
    if not out:
        raise MemsimError(f"{path}: no pairs")
    return out


def pair_cosines(pairs: Sequence[tuple[str, str, str]], embedder: str) -> dict[str, np.ndarray]:
    """Label -> the cosines of its pairs under text embedder ``embedder``, in file order."""
    if embedder not in TEXT_EMBEDDERS:
        raise UnknownIdError(f"unknown embedder {embedder!r}; known: {', '.join(TEXT_EMBEDDERS)}")
    model = make_text_embedder(embedder, DIM, SEED)
    first = model.embed([p[1] for p in pairs]).astype(np.float64)
    second = model.embed([p[2] for p in pairs]).astype(np.float64)
    cos = np.einsum("ij,ij->i", first, second)  # unit rows
    out: dict[str, list[float]] = {}
    for (label, _, _), c in zip(pairs, cos.tolist()):
        out.setdefault(label, []).append(c)
    return {label: np.array(out[label]) for label in LABELS if label in out}


def distribution(cosines: np.ndarray) -> dict[str, float]:
    """n, mean, sd (n - 1) and the QUANTILES of a label's cosines, rounded to 4 places."""
    c = np.asarray(cosines, dtype=np.float64)
    sd = float(c.std(ddof=1)) if len(c) > 1 else 0.0
    out = {"n": int(len(c)), "mean": float(c.mean()), "sd": sd}
    out |= {f"q{round(q * 100):02d}": float(np.quantile(c, q)) for q in QUANTILES}
    return {k: (v if k == "n" else round(v, 4)) for k, v in out.items()}


def measure(pairs: Sequence[tuple[str, str, str]], embedder: str) -> dict[str, Any]:
    """``{"embedder", "pairs", "labels": {label: distribution}}`` of ``pairs``."""
    cos = pair_cosines(pairs, embedder)
    return {
        "embedder": embedder,
        "pairs": len(pairs),
        "labels": {label: distribution(c) for label, c in cos.items()},
    }


def mock_cosines(
    bands: Bands, per_label: int = 200, seed: int = SEED, value_aware: float = VALUE_AWARE
) -> dict[str, np.ndarray]:
    """Label -> cosines the mock's claims embedder gives ``per_label`` pairs of each label
    under ``bands``: claims of one key and value under two item keys (paraphrase), of one
    key with two values (changed value), two keys of one topic (related), two topics
    (unrelated), a question's vector (the asked key, value-blind) with the current and an
    older value's claim, and the same with ``value_aware`` of the current value (the
    follow-up)."""
    emb = ClaimsEmbedder(DIM, bands, seed)
    out: dict[str, list[float]] = {label: [] for label in LABELS}

    def cos(a: np.ndarray, b: np.ndarray) -> float:
        a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        return float(a @ b / math.sqrt(float(a @ a) * float(b @ b)))

    for i in range(per_label):
        key, other, far = f"t{i:04d}.f0", f"t{i:04d}.f1", f"u{i:04d}.f0"
        v = emb.vector
        out["paraphrase"].append(cos(v(key, "v0", f"p{i}a"), v(key, "v0", f"p{i}b")))
        out["changed_value"].append(cos(v(key, "v0", f"c{i}a"), v(key, "v1", f"c{i}b")))
        out["related"].append(cos(v(key, "v0", f"r{i}a"), v(other, "v0", f"r{i}b")))
        out["unrelated"].append(cos(v(key, "v0", f"n{i}a"), v(far, "v0", f"n{i}b")))
        current, stale = v(key, "v1", f"q{i}a"), v(key, "v0", f"q{i}b")
        blind = emb.embed_query([key])
        aware = emb.embed_query([key], {key: "v1"}, value_aware)
        out["question_current"].append(cos(blind, current))
        out["question_stale"].append(cos(blind, stale))
        out["followup_current"].append(cos(aware, current))
        out["followup_stale"].append(cos(aware, stale))
    return {label: np.array(c) for label, c in out.items()}


def load_measured(embedder: str = "wordllama") -> dict[str, Any]:
    """The shipped measurement of ``embedder`` (``memsim bands --embedder NAME --json``)."""
    path = measured_file(embedder)
    try:
        found: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        shipped = sorted(p.stem.removeprefix("bands-") for p in DATA.glob("bands-*.json"))
        raise UnknownIdError(
            f"no shipped band measurement of embedder {embedder!r}; shipped: "
            f"{', '.join(shipped) or 'none'}"
        ) from None
    return found


def band_overrides(labels: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    """``--llm`` overrides (``bands.NAME``: value) that give the mock the centres (means) of
    paraphrase, changed_value and related and every band's sd, from a measurement's
    ``labels``. The mock's unrelated centre is 0 and cannot be set."""
    out = {
        f"bands.{b}": float(labels[b]["mean"]) for b in ("paraphrase", "changed_value", "related")
    }
    out |= {
        f"bands.{b}_sd": float(labels[b]["sd"])
        for b in ("paraphrase", "changed_value", "related", "unrelated")
    }
    Bands(**{k.removeprefix("bands."): v for k, v in out.items()})  # related < changed < para
    return out


def measured_band_overrides(embedder: str = "wordllama") -> dict[str, float]:
    """:func:`band_overrides` of the shipped measurement of ``embedder``: the measured-bands
    protocol's ``--llm`` overrides."""
    return band_overrides(load_measured(embedder)["labels"])
