"""The mutation check's mutants (scripts/mutation.py): every Params default moves to a nearby
legal value, read from the dataclass fields, and the declared equivalents name real ones."""

from __future__ import annotations

import pytest

from scripts import mutation


@pytest.mark.parametrize(
    "value, meta, moved",
    [
        (True, {}, False),  # a bool flips
        (5, {"lo": 0}, 6),  # an int moves one step
        (10, {"lo": 1, "hi": 10}, 9),  # down when up leaves the range
        (0.5, {"lo": 0.0, "hi": 1.0}, 0.55),  # a number 10%
        (0.0, {"lo": 0.0}, 0.01),  # 0.01 from 0
        (1.0, {"lo": 0.0, "hi": 1.0, "lo_open": True}, 0.9),
        (0.0, {"lo": 0.0, "hi": 0.0}, None),  # no legal neighbour: no mutant
        (2, {"choices": (1, 2, 3)}, 3),  # a numeric choice moves to the next one
        (3, {"choices": (1, 2, 3)}, 2),
        ("paper", {"choices": ("paper", "code")}, None),  # a switch between revisions: none
    ],
)
def test_a_default_moves_to_a_nearby_legal_value(value, meta, moved):
    got = mutation.perturb(value, meta)
    assert got == pytest.approx(moved) if moved is not None else got is None
    assert type(got) is type(moved)


def test_every_numeric_or_boolean_field_gets_a_mutant(tmp_path, monkeypatch):
    """Fields are read from the dataclass, so an expression default or a plain one counts;
    each mutant's text replaces just the default's expression."""
    import sys
    import types

    src = (
        "from dataclasses import dataclass\n"
        "from memsim.engine.params import Params, param\n\n\n"
        "@dataclass(frozen=True)\n"
        "class ToyParams(Params):\n"
        "    rate: float = param(1.0 / 3.0, lo=0.0, doc='an expression, not a literal')\n"
        "    plain: int = 4\n"
        "    flag: bool = param(False, doc='a flag')\n"
        "    name: str = param('x', doc='not a number')\n"
    )
    pkg = tmp_path / "toypolicies"
    pkg.mkdir()
    path = pkg / "toy.py"
    path.write_text(src)
    module = types.ModuleType("toypolicies.toy")
    monkeypatch.setitem(sys.modules, "toypolicies", types.ModuleType("toypolicies"))
    monkeypatch.setitem(sys.modules, "toypolicies.toy", module)
    exec(compile(src, str(path), "exec"), module.__dict__)
    monkeypatch.setattr(mutation, "ROOT", tmp_path)
    got = {m.field: src[: m.start] + m.new + src[m.end :] for m in mutation.mutants_of(path, "toy")}
    assert sorted(got) == ["ToyParams.flag", "ToyParams.plain", "ToyParams.rate"]
    assert "param(0.36666666666666664, lo=0.0" in got["ToyParams.rate"]
    assert "    plain: int = 5\n" in got["ToyParams.plain"]
    assert "param(True, doc='a flag')" in got["ToyParams.flag"]


def test_every_declared_equivalent_names_a_default_mutant_and_gives_a_reason():
    modules = mutation.policy_modules()
    fields = {
        f"{m.policy}:{m.field}"
        for stem, path in modules.items()
        for m in mutation.mutants_of(path, stem, comparisons=False)
    }
    for key, reason in mutation.EQUIVALENT.items():
        assert key in fields, key
        assert len(reason.split()) >= 8, key
