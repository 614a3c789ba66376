"""Scenario sources and suites: every event stream memsim can run, addressed by one spec.

    scripted/name-preference              a scripted scenario shipped with memsim
    path/to/file.yaml                     a scripted scenario file of your own
    synthetic:steady,episodes=2000        a synthetic profile with overrides
    locomo:/data/locomo10.json,sample=conv-26,query_time=evidence+7

A source is a :class:`ScenarioSource` registered under its kind through the
``memsim.scenarios`` entry-point group (``KIND:TARGET[,key=value...]`` specs go to the source
named KIND); a source may also accept specs of its own form (``accepts``), as the scripted
source does for ``scripted/NAME`` and ``*.yaml``. Suites (named lists of specs) come through
the ``memsim.suites`` group. Built-in sources register exactly as third-party ones do, and
the engine imports no scenario package.

Options are ``key=value`` pairs after the first comma; a path therefore cannot contain a
comma (rename the file).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

from .errors import ScenarioError, UnknownIdError
from .events import Stream

SOURCE_GROUP = "memsim.scenarios"
SUITE_GROUP = "memsim.suites"


@dataclass(frozen=True)
class ScenarioSource:
    """How one kind of stream is made.

    ``load(target, options, seed, name)`` builds the Stream (``name`` is the full spec);
    ``catalog()`` lists (spec, one-line description) of what ships; ``accepts(spec)`` returns
    the target for a spec without a ``KIND:`` prefix that this source reads, else None.
    ``seeded``: whether the stream depends on the seed. A source that ignores the seed
    (a fixed script, a dataset) says False: its runs under several seeds share one stream,
    so statistics count that stream once, not once per seed."""

    kind: str
    load: Callable[[str, dict[str, Any], int, str], Stream]
    catalog: Callable[[], list[tuple[str, str]]]
    accepts: Callable[[str], str | None] | None = None
    # the stream's stated expectations judged on one run: ``check(stream, trace, policy_id)``
    # gives a Verdict per expectation that applies to the policy (None: a source without any)
    check: Callable[[Stream, Any, str], list[Verdict]] | None = None
    seeded: bool = True


@dataclass(frozen=True)
class Verdict:
    """One expectation of a scenario judged on one run: what was expected, where it is
    stated (``file: expect[3]``), whether it held, and what was found when it did not."""

    expected: str
    where: str
    ok: bool
    detail: str = ""
    note: str = ""  # the seed section the expectation comes from

    def line(self) -> str:
        note = f" [{self.note}]" if self.note else ""
        got = "" if self.ok else f"; {self.detail}"
        return f"{'ok  ' if self.ok else 'FAIL'} {self.where}: {self.expected}{got}{note}"


@dataclass(frozen=True)
class Spec:
    kind: str  # a registered source kind
    target: str  # scripted name or file path, profile name, dataset path ...
    options: tuple[tuple[str, str], ...] = field(default=())

    def option_dict(self) -> dict[str, str]:
        return dict(self.options)


_ENTRY_POINTS: dict[str, dict[str, Any]] = {}


def _entry_points(group: str) -> dict[str, Any]:
    """The group's entry points by name, looked up once per process as the policy registry's
    are (a scan of the installed distributions costs ~3 ms, and every spec is parsed
    several times per run of a sweep)."""
    if group not in _ENTRY_POINTS:
        _ENTRY_POINTS[group] = {ep.name: ep for ep in metadata.entry_points(group=group)}
    return _ENTRY_POINTS[group]


_SOURCES: dict[str, ScenarioSource] = {}


def source(kind: str) -> ScenarioSource:
    """The source registered as ``kind`` (loaded on first use)."""
    if kind not in _SOURCES:
        eps = _entry_points(SOURCE_GROUP)
        if kind not in eps:
            raise UnknownIdError(f"unknown scenario kind {kind!r}; known: {', '.join(eps)}")
        obj = eps[kind].load()
        if not isinstance(obj, ScenarioSource):
            raise TypeError(f"entry point {kind!r} of {SOURCE_GROUP!r} must give a ScenarioSource")
        _SOURCES[kind] = obj
    return _SOURCES[kind]


def kinds() -> list[str]:
    return list(_entry_points(SOURCE_GROUP))


def parse(spec: str) -> Spec:
    """Split a spec string; ScenarioError when it is empty, of no known form, or an option is
    not key=value."""
    if not isinstance(spec, str) or not spec.strip():
        raise ScenarioError(f"scenario spec must be a non-empty string, got {spec!r}")
    spec = spec.strip()
    head, sep, rest = spec.partition(":")
    if sep and head in kinds():
        target, *items = rest.split(",")
        return Spec(head, target.strip(), _pairs(spec, items))
    for kind in kinds():
        accepts = source(kind).accepts
        accepted = accepts(spec) if accepts else None
        if accepted is not None:
            return Spec(kind, accepted)
    forms = ", ".join(f"{k}:..." for k in kinds())
    raise ScenarioError(
        f"unknown scenario spec {spec!r}: use scripted/NAME, a .yaml file path or one of "
        f"{forms} (see `memsim list`)"
    )


def _pairs(spec: str, items: list[str]) -> tuple[tuple[str, str], ...]:
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key:
            raise ScenarioError(f"scenario spec {spec!r}: option {item!r} is not key=value")
        if key in out:
            raise ScenarioError(f"scenario spec {spec!r}: option {key!r} is given twice")
        out[key] = value
    return tuple(out.items())


def load(spec: str, *, seed: int = 0, **options: Any) -> Stream:
    """The Stream a spec names; ``options`` add to (and override) the spec's own options."""
    s = parse(spec)
    merged: dict[str, Any] = {**s.option_dict(), **options}
    return source(s.kind).load(s.target, merged, seed, spec)


def seeded(spec: str) -> bool:
    """Whether the stream ``spec`` names depends on the seed (its source's ``seeded``)."""
    return source(parse(spec).kind).seeded


def verdicts(spec: str, stream: Stream, trace: Any, policy_id: str) -> list[Verdict]:
    """The expectations ``stream`` (loaded from ``spec``) states for ``policy_id``, judged on
    ``trace``: empty when its source states none."""
    check = source(parse(spec).kind).check
    return list(check(stream, trace, policy_id)) if check is not None else []


def catalog() -> list[tuple[str, str]]:
    """(spec, one-line description) for every registered source's shipped scenarios."""
    return [row for kind in kinds() for row in source(kind).catalog()]


def suites() -> list[str]:
    return list(_entry_points(SUITE_GROUP))


def suite(name: str, **inputs: Any) -> list[str]:
    """The specs of the suite ``name``; ``inputs`` (e.g. ``locomo_path``) go to the suite."""
    eps = _entry_points(SUITE_GROUP)
    if name not in eps:
        raise UnknownIdError(f"unknown suite {name!r}; known: {', '.join(eps)}")
    specs: list[str] = eps[name].load()(**inputs)
    return specs


def describe_suites() -> Mapping[str, str]:
    return {
        name: (ep.load().__doc__ or "").strip().splitlines()[0]
        for name, ep in _entry_points(SUITE_GROUP).items()
    }
