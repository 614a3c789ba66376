"""The claims table: every worked example's implementation must follow the document's
formula. Whether the document's own number agrees is recorded, not asserted."""

from __future__ import annotations

import math

import pytest

from memsim.engine.claims import DocClaim, register_claim
from memsim.workbench.cli.main import main
from memsim.workbench.studies.claims import (
    COLUMNS,
    all_claims,
    claims_table,
    evaluate,
)

CLAIMS = all_claims()


@pytest.mark.parametrize("claim", CLAIMS, ids=[c.id for c in CLAIMS])
def test_implementation_follows_formula(claim):
    implementation, formula = float(claim.measure()), float(claim.formula())
    if math.isinf(formula):
        assert implementation == formula
    else:
        assert implementation == pytest.approx(formula, rel=1e-9, abs=1e-12)


def test_izzie_and_kernle_claims_present():
    ids = {c.id for c in CLAIMS}
    assert {
        "izzie.preference_30d_strength",
        "izzie.preference_30d_decay_factor",
        "kernle.never_accessed_salience",
        "kernle.never_accessed_forgotten_day",
    } <= ids


def test_evaluate_records_agreement_and_failures():
    ok = DocClaim("t.ok", "t", "doc", "§x", "s", 0.67, lambda: 0.6667, lambda: 0.6667, 0.005)
    off = DocClaim("t.off", "t", "doc", "§x", "s", 50.0, lambda: 89.0, lambda: 89.0, 5.0)
    none = DocClaim("t.none", "t", "doc", "§x", "s", None, lambda: 0.0, lambda: 0.0, 0.0)
    broken = DocClaim("t.broken", "t", "doc", "§x", "s", 1.0, lambda: 1 / 0, lambda: 1.0, 0.0)
    assert evaluate(ok)["agrees"] is True
    assert evaluate(off)["agrees"] is False
    assert evaluate(none)["agrees"] is None
    row = evaluate(broken)
    assert math.isnan(row["implementation"]) and "ZeroDivisionError" in row["note"]
    with pytest.raises(ValueError):
        DocClaim("t.bad", "t", "doc", "§x", "s", 1.0, lambda: 1.0, lambda: 1.0, -1.0)


def test_register_claim_replaces_same_id():
    from memsim.engine import claims as mod

    n = len(mod.CLAIMS)
    c = register_claim("t.tmp", "t", "doc", "§x", "s", 1.0, lambda: 1.0, lambda: 1.0, 0.0)
    register_claim(c)
    assert len(mod.CLAIMS) == n + 1
    mod.CLAIMS.remove(c)


def test_table_and_files(tmp_path):
    table = claims_table(["izzie"])
    assert list(table.columns) == COLUMNS
    row = table.set_index("id").loc["izzie.preference_30d_strength"]
    assert row["documented"] == 0.67 and row["implementation"] == pytest.approx(
        0.9 * math.exp(-0.3)
    )
    assert bool(row["agrees"])
    assert main(["claims", "--root", str(tmp_path)]) == 0
    md = (tmp_path / "docs" / "claims.md").read_text()
    assert "kernle.never_accessed_salience" in md and "| id | policy |" in md
    csv = (tmp_path / "results" / "claims.csv").read_text()
    assert csv.splitlines()[0] == ",".join(COLUMNS)


def test_every_disagreement_has_a_kind_and_nightly_rows_are_readings():
    """Each disagreement says what it is; Cosmo's compounding-nightly rows are a
    non-default reading (002 §Offline/Nightly Decay Job), not the document's number."""
    from memsim.engine.claims import KIND_READING, KIND_SELF, KINDS

    table = claims_table()
    dis = table[table["agrees"] == False]  # noqa: E712
    assert set(dis["kind"]) <= set(KINDS) and (dis["kind"] != "").all()
    assert (table[table["agrees"] != False]["kind"] == "").all()  # noqa: E712
    nightly = dis[dis["id"].str.endswith("_nightly")]
    assert len(nightly) >= 6 and (nightly["kind"] == KIND_READING).all()
    selfc = set(dis[dis["kind"] == KIND_SELF]["id"])
    assert {
        "cosmo.low_confidence_candidate_exists",  # 002: the 0.4 candidate vs the 0.7 floor
        "cosmo.semantic_vs_episodic_rate_0.70",  # 002: semantic decays slower vs the penalty
        "cosmo.macro_reachable",  # 002: Macro needs 2 Storylines, has_meso allows 1
        "engram.archive_min_evidence_boundary",  # 001 §Configuration vs §Belief Lifecycle 8
        "engram.beliefs_never_deleted",  # 001 §Architecture Decisions vs handleMemoryForget
    } <= selfc
    # 002 never says the consolidation day is 100: that row records a finding only
    row = table.set_index("id").loc["cosmo.one_off_consolidated_day"]
    assert math.isnan(row["documented"]) and row["agrees"] is None
    with pytest.raises(ValueError, match="kind"):
        DocClaim("t.k", "t", "doc", "§x", "s", 1.0, lambda: 1.0, lambda: 1.0, 0.0, kind="other")


def test_table_is_independent_of_last_bit_differences(tmp_path):
    """The table must be byte-identical across machines: values are rounded to a
    fixed number of significant digits, so a libm difference in the last bit cannot show."""
    from memsim.workbench.studies.claims import SIGNIFICANT_DIGITS

    x = math.exp(-0.02 * 35 * 36 / 2)
    a = DocClaim("t.a", "t", "doc", "§x", "s", 0.5, lambda: x, lambda: x, 0.005)
    b = DocClaim("t.a", "t", "doc", "§x", "s", 0.5, lambda: math.nextafter(x, 1), lambda: x, 0.005)
    assert evaluate(a) == evaluate(b)
    v = evaluate(a)["implementation"]
    assert v != x and v == float(f"{x:.{SIGNIFICANT_DIGITS}g}")


def test_reference_model_claims_present_with_their_sources():
    """The reference models' published numbers are rows of the table, each naming
    its paper or package; FSRS-6's one Good review then 10 days gives S 2.3065, R 0.77437."""
    table = claims_table(["fsrs", "actr", "actr-spacing", "ebisu", "memorybank"]).set_index("id")
    row = table.loc["fsrs.good_review_10d_retrievability"]
    assert row["documented"] == 0.77437 and bool(row["agrees"])
    assert table.loc["fsrs.good_review_stability", "implementation"] == 2.3065
    assert table.loc["ebisu.recall_at_twice_half_life", "implementation"] == pytest.approx(2 / 7)
    assert table.loc["actr-spacing.one_presentation_forgotten_day", "formula"] == pytest.approx(
        3746.912482, rel=1e-9
    )
    assert all(not d.endswith(".txt") for d in table["document"])
    ids = {c.id for c in CLAIMS}
    assert {"generative-agents.recency_one_day", "generative-agents-code.weights"} <= ids
    assert {"memorybank-code.stronger_fades_faster", "memorybank-code.upload_cutoff_day"} <= ids
