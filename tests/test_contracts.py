"""Typed contracts instead of probing: what only some LLMs or policies can do is a declared
capability checked with isinstance, and no module asks a known type whether it has an
attribute (hasattr / getattr) except where the object is genuinely dynamic."""

import ast
from pathlib import Path

import numpy as np

from memsim.engine import registry
from memsim.engine.llm import LLM, Configurable, TruthBound
from memsim.engine.mockllm import MockLLM
from memsim.engine.policy import IdleSkipping

ROOT = Path(__file__).resolve().parents[1]

# (file, call as written) -> why the object probed is not a known type
ALLOWED_PROBES = {
    ("memsim/__init__.py", "getattr(importlib.import_module(_API[name]), name)"): (
        "the package's lazy public API: a name looked up in a module"
    ),
    ("memsim/engine/params.py", "getattr(self, f.name)"): "a dataclass's fields by name",
    ("memsim/engine/params.py", "getattr(default, name)"): "a dataclass's fields by name",
    ("memsim/engine/registry.py", "getattr(importlib.import_module(module), name)"): (
        "an entry point's 'module:name'"
    ),
    ("memsim/engine/embed.py", "getattr(_drawers, 'drawer', None)"): (
        "a threading.local, empty in a new thread"
    ),
    ("memsim/engine/embed.py", "getattr(model, 'get_embedding_dimension', None)"): (
        "a third-party model: the method's name differs between sentence-transformers releases"
    ),
    ("memsim/workbench/cli/args.py", "getattr(typed, k)"): (
        "Params fields named on the command line"
    ),
    ("memsim/workbench/cli/main.py", "getattr(verb, add_arguments)"): (
        "a verb's module imported by the name VERBS gives it"
    ),
    ("memsim/workbench/cli/main.py", "getattr(verb, body)"): (
        "a verb's module imported by the name VERBS gives it"
    ),
    ("memsim/workbench/cli/main.py", "hasattr(code, '__index__')"): (
        "whatever a command body returned (an int, None, a result)"
    ),
    ("memsim/workbench/studies/tune.py", "getattr(defaults, k)"): "Params fields chosen by name",
    ("memsim/workbench/studies/sweep.py", "getattr(spec(policy).load(), 'study_fields', None)"): (
        "a long-study design a policy class may declare (the engine's Policy does not)"
    ),
    ("memsim/workbench/studies/sweep.py", "getattr(spec(policy).load(), 'study_trials', None)"): (
        "a long-study design a policy class may declare (the engine's Policy does not)"
    ),
    ("memsim/workbench/runs/results.py", "hasattr(pkg, '__path__')"): (
        "a plug-in that is a package or a single module"
    ),
    (
        "memsim/workbench/present/figures.py",
        "getattr(importlib.import_module(spec_.claims), attr, None)",
    ): "a seed document's claims module, which may not set the attribute",
}


def _probes():
    found = set()
    for top in ("memsim", "scenarios"):
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = str(path.relative_to(ROOT))
            for node in ast.walk(ast.parse(path.read_text())):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Name)
                    and node.func.id in ("hasattr", "getattr")
                ):
                    call = f"{node.func.id}({', '.join(ast.unparse(a) for a in node.args)})"
                    found.add((rel, call))
    return found


def test_no_probing_of_known_types():
    assert sorted(_probes() - set(ALLOWED_PROBES)) == []


def test_every_allowed_probe_is_still_there():
    assert sorted(set(ALLOWED_PROBES) - _probes()) == []


class PlainLLM:
    """A model without the mock's capabilities: it answers the LLM protocol only (here by
    asking a mock, which it does not expose)."""

    def __init__(self, seed: int = 0) -> None:
        self._inner = MockLLM(seed=seed)
        self.dim, self.seed = self._inner.dim, self._inner.seed

    def extract(self, episode):
        return self._inner.extract(episode)

    def embed(self, items, keys):
        return self._inner.embed(items, keys)

    def embed_query(self, query):
        return self._inner.embed_query(query)

    def classify(self, new, candidates, *, answer, key):
        return self._inner.classify(new, candidates, answer=answer, key=key)

    def summarize(self, texts, *, key):
        return self._inner.summarize(texts, key=key)

    def synthesize(self, claims, *, key):
        return self._inner.synthesize(claims, key=key)


def test_the_mock_declares_its_capabilities_and_a_plain_llm_has_none():
    mock, plain = MockLLM(seed=1), PlainLLM(seed=1)
    assert isinstance(mock, TruthBound) and isinstance(mock, Configurable)
    assert isinstance(plain, LLM)
    assert not isinstance(plain, TruthBound) and not isinstance(plain, Configurable)


def test_a_run_with_a_plain_llm_works(monkeypatch):
    """Without bind_truth and config the run goes on: the manifest records the seed only."""
    from memsim.workbench.runs import execution
    from memsim.workbench.runs.results import RunDef

    monkeypatch.setattr(
        execution, "build_llm", lambda seed, meta, overrides, metered=True: PlainLLM(seed)
    )
    d = RunDef("keep-all", "scripted/name-preference", 3)
    r = execution.execute(d)
    assert r.manifest["llm"] == {"seed": 3}
    assert len(r.queries) and np.isfinite(r.queries["recall"]).any()


def test_idle_skipping_is_declared_by_the_policies_that_skip():
    skippers = {s.id for s in registry.specs(references=True) if issubclass(s.load(), IdleSkipping)}
    assert skippers, "no registered policy can skip idle ticks"
    assert "keep-all" not in skippers
    assert registry.make("keep-all").spec is registry.spec("keep-all")
