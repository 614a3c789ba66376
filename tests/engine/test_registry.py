"""Registry: lazy loading, versioned ids, unknown ids list the known ones, capabilities."""

import sys

import pytest

from memsim.engine import registry
from memsim.engine.errors import UnknownIdError
from memsim.engine.mockllm import MockLLM


@pytest.fixture
def scratch():
    """Register test specs and remove them afterwards (the registry is process-wide)."""
    registry.specs()  # load the built-ins first
    before = dict(registry._SPECS)
    yield
    registry._SPECS.clear()
    registry._SPECS.update(before)


def test_loading_is_lazy(scratch):
    sys.modules.pop("tests._never_imported", None)
    s = registry.register("lazy-thing", 1, "tests._never_imported:Nope")
    assert "tests._never_imported" not in sys.modules
    assert registry.spec("lazy-thing") is s
    with pytest.raises(ModuleNotFoundError):
        s.load()


def test_versioned_ids(scratch):
    v1 = registry.register("demo", 1, "policies.baselines:KeepAll", baseline=False)
    v2 = registry.register("demo", 2, "policies.baselines:Recency", capabilities={"forget"})
    assert (
        registry.spec("demo") is v2
        and registry.spec("demo-v1") is v1
        and registry.spec("demo-v2") is v2
    )
    assert v1.full_id == "demo-v1"
    assert [s for s in registry.specs() if s.id == "demo"] == [v2]


def test_specs_put_baselines_first():
    ids = [s.id for s in registry.specs()]
    assert ids[:2] == ["keep-all", "recency"]
    assert ids[2:] == sorted(ids[2:])


def test_unknown_id_lists_known_ids():
    with pytest.raises(UnknownIdError) as err:
        registry.spec("no-such-policy")
    msg = str(err.value)
    assert "unknown policy id 'no-such-policy'" in msg and "keep-all" in msg and "recency" in msg
    assert isinstance(err.value, KeyError)


@pytest.mark.parametrize("bad", ["Pai", "pai-v2", "1pai", "", "a b"])
def test_bad_ids_are_refused(scratch, bad):
    with pytest.raises(ValueError, match="bad policy id"):
        registry.register(bad, 1, "x:y")


def test_unknown_capability_is_refused(scratch):
    with pytest.raises(ValueError, match="unknown capabilities"):
        registry.register("cap", 1, "x:y", capabilities={"teleport"})


def test_make_builds_with_params_and_attaches_the_spec():
    p = registry.make("recency", {"budget": 5}, llm=MockLLM(seed=1), seed=1)
    assert p.params.budget == 5 and p.spec is registry.spec("recency") and p.seed == 1
    q = registry.spec("recency").make(llm=MockLLM(seed=1))
    assert q.params == type(q).Params()
    with pytest.raises(TypeError, match="takes RecencyParams"):
        registry.spec("recency").make(
            registry.spec("keep-all").load().Params(), llm=MockLLM(seed=1)
        )


def test_third_party_policies_arrive_through_the_entry_point_group(monkeypatch):
    from importlib import metadata

    from memsim.engine import registry

    class FakeEntryPoint:
        name = "plugin-keep"  # (as importlib.metadata.EntryPoint has)

        def load(self):
            def plugin():
                registry.register(
                    "plugin-keep",
                    3,
                    "policies.baselines:KeepAll",
                    description="a third-party policy",
                )

            return plugin

    def entry_points(group):
        assert group == registry.ENTRY_POINT_GROUP
        return [FakeEntryPoint()]

    monkeypatch.setattr(metadata, "entry_points", entry_points)
    monkeypatch.setattr(registry, "_loaded_plugins", False)
    monkeypatch.setattr(registry, "_SPECS", dict(registry._SPECS))
    assert registry.spec("plugin-keep").full_id == "plugin-keep-v3"
    assert type(registry.make("plugin-keep")).__name__ == "KeepAll"
