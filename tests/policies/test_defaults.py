"""Every policy's Params defaults equal its table of documented defaults.

policies/defaults/<id>.csv holds one row per Params field: the field, the value the seed
document gives (a Python literal) and the document section it comes from. Tests elsewhere set
parameters explicitly, so without this table a changed default would pass unnoticed. The
table is written by hand from the seed documents; change it only with the document in hand.
"""

from __future__ import annotations

import ast
import csv
import dataclasses
import math
from pathlib import Path

import pytest

from memsim.engine import registry

TABLES = Path(__file__).resolve().parents[2] / "policies" / "defaults"
SPECS = [s for s in registry.specs() if s.entry_point.startswith("policies.")]


def table(policy_id: str) -> list[dict[str, str]]:
    with open(TABLES / f"{policy_id}.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def test_every_built_in_policy_has_a_table():
    assert {s.id for s in SPECS} >= {"pai", "engram", "cosmo", "izzie", "kernle", "keep-all"}
    assert sorted(p.stem for p in TABLES.glob("*.csv")) == sorted(s.id for s in SPECS)


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.id)
def test_params_defaults_equal_the_documented_table(spec):
    fields = {f.name: f for f in dataclasses.fields(spec.load().Params)}
    rows = table(spec.id)
    assert [r["field"] for r in rows] == list(fields), f"{spec.id}: fields differ from the table"
    for r in rows:
        f = fields[r["field"]]
        want = ast.literal_eval(r["value"])
        got = f.default
        where = f"{spec.id}.{f.name} ({r['section']})"
        assert type(got) is type(want), f"{where}: {got!r} is not a {type(want).__name__}"
        if isinstance(want, float) and math.isnan(want):
            assert math.isnan(got), where
        else:
            assert got == want, f"{where}: default {got!r}, document says {want!r}"
        assert f.metadata.get("doc") == r["section"], f"{where}: the field's doc differs"
        assert r["section"], f"{where}: no section named"
