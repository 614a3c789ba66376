"""Scenarios: every event stream memsim can run, addressed by one spec string.

    load("scripted/name-preference")                 a shipped scripted scenario
    load("my/scenario.yaml")                          your own scripted file
    load("synthetic:churn,episodes=5000", seed=3)     a synthetic profile with overrides
    load("locomo:/data/locomo10.json,sample=conv-26") a LoCoMo conversation

``catalog()`` lists what ships (for ``memsim list``); ``suite(name)`` expands a named suite.
The stream's ``name`` is the spec it was loaded from.
"""
from __future__ import annotations

from typing import Any

from memsim.errors import ScenarioError
from memsim.events import Stream

from . import spec as _spec
from .suites import SUITES, suite

__all__ = ["load", "catalog", "suite", "SUITES"]


def load(spec: str, *, seed: int = 0, **options: Any) -> Stream:
    """The Stream a spec names. ``options`` add to (and override) the spec's own options.

    Scripted scenarios are fixed (``seed`` is ignored); synthetic streams depend on ``seed``;
    LoCoMo streams do not."""
    s = _spec.parse(spec)
    if s.kind in ("scripted", "file"):
        if s.options or options:
            raise ScenarioError(f"scenario {spec!r}: scripted scenarios take no options, got "
                                f"{sorted(set(dict(s.options)) | set(options))}")
        from . import scripted
        loaded = scripted.load(s.target) if s.kind == "scripted" else scripted.load_file(s.target, name=spec)
        return loaded.stream
    opts = _spec.merge_options(s.option_dict(), options)
    if s.kind == "synthetic":
        from . import synthetic
        params, bands, faults = synthetic.from_options(s.target, opts)
        return synthetic.generate(params, seed, bands=bands, faults=faults, name=spec,
                                  profile_name=s.target)
    from . import locomo
    return locomo.load_stream(s.target, name=spec, **opts)


def catalog() -> list[tuple[str, str]]:
    """(spec, one-line description) for every shipped scenario kind."""
    from . import scripted, synthetic
    rows = [(f"scripted/{n}", scripted.describe(n)) for n in scripted.names()]
    rows += [(f"synthetic:{n}", p.description) for n, p in synthetic.PROFILES.items()]
    rows.append(("locomo:PATH[,sample=ID,query_time=after|evidence+DAYS]",
                 "LoCoMo conversations from your copy of the official JSON"))
    return rows
