"""The table of the seed documents' worked examples: what each document states, what the
implementation gives through its real code path, and what the document's own formula gives.

Each policy's claims live in the module its spec names (``PolicySpec.claims``) and call
:func:`register_claim`:

    register_claim(id="izzie.preference_30d_strength", policy="izzie", document="003_...txt",
                   section="§Memory Strength Calculation",
                   statement="... strength = 0.9 x 0.74 = 0.67",
                   documented=0.67, measure=lambda: ..., formula=lambda: 0.9 * math.exp(-0.3),
                   tol=0.005, note="the document rounds the decay factor first")

``documented`` is the number the document states (None when it states none: the row then
records what the formula implies, e.g. a finding); ``measure()`` runs the implementation
(usually :func:`memsim.workbench.curves.curve`); ``formula()`` evaluates the document's formula
in plain math. tests/test_claims.py requires implementation == formula for every claim; whether the
document's own number agrees (``|documented - implementation| <= tol``) is a finding recorded
in the table, not a failure. Each disagreement has a ``kind`` (KINDS): the document's number
against its own closed form; a number that only disagrees under a reading the project does
not use by default (e.g. Cosmo's compounding nightly job); or the document contradicting
itself (two of its statements cannot both hold).

Numbers are written to SIGNIFICANT_DIGITS significant digits, so the last bits of a libm
function (which differ across machines) cannot change either file: the table is
byte-identical wherever it is generated.

``memsim claims`` regenerates docs/claims.md and results/claims.csv.
"""

from __future__ import annotations

import argparse
import importlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from memsim.engine.errors import ParamError

COLUMNS = [
    "id",
    "policy",
    "document",
    "section",
    "statement",
    "documented",
    "implementation",
    "formula",
    "agrees",
    "kind",
    "note",
]

KIND_FORMULA = "number vs formula"
KIND_READING = "non-default reading"
KIND_SELF = "self-contradiction"
KINDS = (KIND_FORMULA, KIND_READING, KIND_SELF)
# Enough for every stated number (the documents state 1-4 digits), few enough that libm's
# last-bit differences across machines never show.
SIGNIFICANT_DIGITS = 10


@dataclass(frozen=True)
class DocClaim:
    """One worked example of a seed document (see the module docstring)."""

    id: str
    policy: str
    document: str
    section: str
    statement: str
    documented: float | None
    measure: Callable[[], float]
    formula: Callable[[], float]
    tol: float
    note: str = ""
    kind: str = KIND_FORMULA  # what a disagreement is (KINDS); shown only when it disagrees

    def __post_init__(self) -> None:
        if not self.id or not isinstance(self.id, str):
            raise ValueError(f"claim id must be a non-empty string, got {self.id!r}")
        if not (self.tol >= 0):
            raise ValueError(f"claim {self.id}: tol must be >= 0, got {self.tol!r}")
        if not callable(self.measure) or not callable(self.formula):
            raise ValueError(f"claim {self.id}: measure and formula must be callables")
        if self.kind not in KINDS:
            raise ValueError(f"claim {self.id}: kind must be one of {KINDS}, got {self.kind!r}")

    def agrees(self, implementation: float) -> bool | None:
        """Does the document's stated number match the implementation (None: no number)?"""
        if self.documented is None or implementation is None or math.isnan(implementation):
            return None
        if math.isinf(self.documented) or math.isinf(implementation):
            return self.documented == implementation
        return abs(self.documented - implementation) <= self.tol


CLAIMS: list[DocClaim] = []


def register_claim(*args: Any, **kwargs: Any) -> DocClaim:
    """Register a DocClaim (or build one from DocClaim's arguments). Re-registering an id
    replaces the old claim, so re-importing a module does not duplicate rows."""
    claim = (
        args[0]
        if len(args) == 1 and not kwargs and isinstance(args[0], DocClaim)
        else DocClaim(*args, **kwargs)
    )
    for i, c in enumerate(CLAIMS):
        if c.id == claim.id:
            CLAIMS[i] = claim
            return claim
    CLAIMS.append(claim)
    return claim


def all_claims() -> list[DocClaim]:
    """Every registered claim, after importing the claims module each registered policy
    declares on its spec (``PolicySpec.claims``)."""
    for s in _claim_specs():
        importlib.import_module(s.claims)
    return list(CLAIMS)


def _claim_specs() -> list[Any]:
    """Specs that declare claims: the seed systems in seed-document order (then id), then
    the reference models (no seed document) by id."""
    from memsim.engine.registry import specs

    return sorted(
        (s for s in specs() if s.claims), key=lambda s: (not s.seed_document, s.seed_document, s.id)
    )


def evaluate(claim: DocClaim) -> dict[str, Any]:
    """One table row. A measure or formula that raises is recorded (NaN and the error),
    so one broken claim does not hide the others; tests/test_claims.py fails on it."""
    note = claim.note
    values: dict[str, float] = {}
    for what, fn in (("implementation", claim.measure), ("formula", claim.formula)):
        try:
            values[what] = float(fn())
        except Exception as e:  # noqa: BLE001 - recorded in the table, raised by the tests
            values[what] = math.nan
            note = f"{note} [{what} failed: {type(e).__name__}: {e}]".strip()
    for what, v in values.items():
        values[what] = _round(v)
    agrees = claim.agrees(values["implementation"])
    return {
        "id": claim.id,
        "policy": claim.policy,
        "document": claim.document,
        "section": claim.section,
        "statement": claim.statement,
        "documented": math.nan if claim.documented is None else float(claim.documented),
        "implementation": values["implementation"],
        "formula": values["formula"],
        "agrees": agrees,
        "kind": claim.kind if agrees is False else "",
        "note": note,
    }


def claims_table(policies: Sequence[str] | None = None) -> pd.DataFrame:
    """The claims table (optionally only some policies), in registration order by policy."""
    claims = all_claims()
    order = {s.id: i for i, s in enumerate(_claim_specs())}
    claims = sorted(claims, key=lambda c: order.get(c.policy, len(order)))
    if policies:
        claims = [c for c in claims if c.policy in set(policies)]
    return pd.DataFrame([evaluate(c) for c in claims], columns=COLUMNS)


def _round(v: float) -> float:
    """``v`` to SIGNIFICANT_DIGITS significant digits (inf and NaN unchanged)."""
    return v if not math.isfinite(v) else float(f"{v:.{SIGNIFICANT_DIGITS}g}")


def _fmt(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "**no**"
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v).replace("|", "\\|").replace("\n", " ")


def to_markdown(table: pd.DataFrame) -> str:
    lines = [
        "# The seed documents' worked examples (and the reference models' published numbers)",
        "",
        "Generated by `memsim claims` (memsim/workbench/claims.py, policies/*_claims.py): do not "
        "edit by hand.",
        "",
        "`documented` is the number the document states (`-`: it states none); `implementation`",
        "is what memsim's policy gives through its real code path; `formula` is the document's own",
        "formula in plain math. The tests require implementation = formula; `agrees` records "
        "whether",
        "the document's stated number matches (within the rounding tolerance of the claim);",
        "`kind` says what a disagreement is: the document's number against its own closed form",
        f"(`{KIND_FORMULA}`), a number that disagrees only under a reading memsim does not use by",
        f"default, such as Cosmo's compounding nightly job (`{KIND_READING}`), or the document",
        f"contradicting itself (`{KIND_SELF}`). The reference models (no seed document) "
        "follow: `document` names the paper or package, `documented` the number it prints "
        "(`-` where it prints only the formula).",
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "| " + " | ".join("---" for _ in COLUMNS) + " |",
    ]
    for rec in table.to_dict("records"):
        agrees = rec["agrees"]
        rec["agrees"] = (
            None
            if agrees is None or (isinstance(agrees, float) and math.isnan(agrees))
            else bool(agrees)
        )
        lines.append("| " + " | ".join(_fmt(rec[c]) for c in COLUMNS) + " |")
    disagree = table[table["agrees"] == False]  # noqa: E712 - object column with None
    by_kind = ", ".join(f"{int((disagree['kind'] == k).sum())} {k}" for k in KINDS)
    lines += [
        "",
        f"{len(table)} claims; {len(disagree)} where the document's number disagrees ({by_kind}).",
    ]
    return "\n".join(lines) + "\n"


def write_claims(out_dir: str | Path = ".") -> tuple[Path, Path]:
    """Write ``docs/claims.md`` and ``results/claims.csv`` under ``out_dir`` (the repo root)."""
    root = Path(out_dir)
    table = claims_table()
    md = root / "docs" / "claims.md"
    csv = root / "results" / "claims.csv"
    md.parent.mkdir(parents=True, exist_ok=True)
    csv.parent.mkdir(parents=True, exist_ok=True)
    md.write_text(to_markdown(table))
    table.to_csv(csv, index=False, float_format=f"%.{SIGNIFICANT_DIGITS}g")
    return md, csv


def add_claims_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--out",
        "--root",
        dest="root",
        default=None,
        help="folder to write docs/claims.md and results/claims.csv under "
        "(default: the memsim checkout, whatever the current directory)",
    )


def main_claims(args: argparse.Namespace | Sequence[str] | None = None) -> int:
    """``memsim claims``: regenerate both files and print a one-line summary."""
    if not isinstance(args, argparse.Namespace):
        parser = argparse.ArgumentParser(prog="memsim claims")
        add_claims_arguments(parser)
        args = parser.parse_args(list(args) if args is not None else None)
    root = getattr(args, "root", None)
    if root is None:
        from ..runs.results import project_root

        root = project_root()
    elif Path(root).exists() and not Path(root).is_dir():
        raise ParamError(f"--out: {str(root)!r} is a file, not a folder")
    md, csv = write_claims(root)
    table = pd.read_csv(csv)
    n_dis = int((table["agrees"].astype(str) == "False").sum())
    print(
        f"wrote {md} and {csv}: {len(table)} claims, {n_dis} where the document disagrees "
        "with its formula"
    )
    return 0
