"""Hand-written scenarios in YAML: a readable event list plus per-policy expectations.

The format is documented in docs/scenarios.md. Loading is strict: every field is checked
against a schema and a mistake raises ScenarioError naming the file, the path inside it
(``episodes[3].claims[0].importance``) and the offending value. Files are read with
``yaml.safe_load`` only, so no code in a scenario file ever runs.

Scripted scenarios shipped with memsim live in ``scenarios/scripted/*.yaml`` and are
addressed as ``scripted/NAME``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from memsim.engine import limits
from memsim.engine.errors import ScenarioError, StreamError, UnknownIdError
from memsim.engine.events import MAX_K, Claim, Episode, Forget, Protect, Query, Recover, Stream
from memsim.engine.sources import ScenarioSource

from . import expect as _expect

SCRIPTED_DIR = Path(__file__).resolve().parent / "scripted"

_TOP = {
    "name",
    "description",
    "seed",
    "horizon",
    "episodes",
    "queries",
    "forgets",
    "protects",
    "recovers",
    "expect",
}
_EPISODE = {"id", "time", "text", "claims", "speaker", "conversation", "project", "repeat", "every"}
_CLAIM = {"key", "value", "category", "importance", "subject", "confidence", "noise", "attrs"}
_QUERY = {
    "id",
    "time",
    "text",
    "keys",
    "answers",
    "k",
    "subject",
    "group",
    "project",
    "repeat",
    "every",
}
_ACTION = {"id", "time", "episode"}
MAX_REPEAT = limits.MAX_REPEAT
# Same-time events run in this order: what a user says, then what they do, then questions.
_RANK = {Episode: 0, Protect: 1, Forget: 1, Recover: 1, Query: 2}


@dataclass(frozen=True)
class Scripted:
    """A loaded scripted scenario: its stream and its expectations."""

    stream: Stream
    expectations: tuple[_expect.Expectation, ...]
    path: Path


class _Ctx:
    """Where we are in a file, for error messages."""

    def __init__(self, file: str) -> None:
        self.file = file

    def fail(self, path: str, msg: str, value: Any) -> ScenarioError:
        # a huge value would make a huge "one-line" error: shown() cuts it
        shown = limits.shown(value)
        return ScenarioError(f"{self.file}: {path or '(top level)'}: {msg}, got {shown}")

    # -- typed getters ---------------------------------------------------------
    def mapping(self, value: Any, path: str, allowed: set[str], required: tuple[str, ...]) -> dict:
        if not isinstance(value, dict):
            raise self.fail(path, "must be a mapping", value)
        for key in value:
            if key not in allowed:
                raise self.fail(
                    f"{path}.{key}" if path else str(key),
                    f"unknown field (allowed: {', '.join(sorted(allowed))})",
                    value[key],
                )
        for key in required:
            if key not in value:
                raise self.fail(path or "file", f"missing required field {key!r}", value)
        return value

    def string(self, value: Any, path: str, *, empty: bool = True) -> str:
        if not isinstance(value, str) or (not empty and not value):
            raise self.fail(path, "must be a " + ("string" if empty else "non-empty string"), value)
        return value

    def number(
        self, value: Any, path: str, lo: float | None = None, hi: float | None = None
    ) -> float:
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or (isinstance(value, float) and not math.isfinite(value))
            or (isinstance(value, int) and abs(value) > 1e308)  # compared exactly, as an int
        ):
            raise self.fail(path, "must be a finite number", value)
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise self.fail(
                path,
                f"must be in [{'-inf' if lo is None else lo}, {'inf' if hi is None else hi}]",
                value,
            )
        return float(value)

    def integer(self, value: Any, path: str, lo: int = 0, hi: int | None = None) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < lo:
            raise self.fail(path, f"must be an integer >= {lo}", value)
        if hi is not None and value > hi:
            raise self.fail(path, f"must be an integer in [{lo}, {hi}]", value)
        return value

    def boolean(self, value: Any, path: str) -> bool:
        if not isinstance(value, bool):
            raise self.fail(path, "must be true or false", value)
        return value

    def str_list(self, value: Any, path: str) -> tuple[str, ...]:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list):
            raise self.fail(path, "must be a list of strings", value)
        return tuple(self.string(v, f"{path}[{i}]", empty=False) for i, v in enumerate(value))

    def items(self, value: Any, path: str) -> list:
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.fail(path, "must be a list", value)
        return value


def _expand(ctx: _Ctx, raw: dict, path: str) -> list[tuple[dict, str]]:
    """``repeat: N, every: D`` turns one item into N items D days apart; ``{i}`` (1..N) in
    strings is replaced by the repetition number."""
    if "repeat" not in raw:
        if "every" in raw:
            raise ctx.fail(f"{path}.every", "needs repeat", raw["every"])
        return [(raw, path)]
    n = ctx.integer(raw["repeat"], f"{path}.repeat", lo=1)
    if n > MAX_REPEAT:
        raise ctx.fail(f"{path}.repeat", f"must be at most {MAX_REPEAT} (write a generator)", n)
    every = ctx.number(raw.get("every", 0), f"{path}.every", lo=0)
    t0 = ctx.number(raw.get("time"), f"{path}.time", lo=0)
    if "{i}" not in str(raw.get("id", "")):
        raise ctx.fail(f"{path}.id", "a repeated item needs '{i}' in its id", raw.get("id"))
    out = []
    for i in range(1, n + 1):
        item = _substitute({k: v for k, v in raw.items() if k not in ("repeat", "every")}, str(i))
        item["time"] = t0 + (i - 1) * every
        out.append((item, f"{path}(repeat {i})"))
    return out


def _substitute(value: Any, i: str) -> Any:
    if isinstance(value, str):
        return value.replace("{i}", i)
    if isinstance(value, list):
        return [_substitute(v, i) for v in value]
    if isinstance(value, dict):
        return {k: _substitute(v, i) for k, v in value.items()}
    return value


def _claim(ctx: _Ctx, raw: Any, path: str) -> Claim:
    raw = ctx.mapping(raw, path, _CLAIM, ("key",))
    attrs = raw.get("attrs", {}) or {}
    if not isinstance(attrs, dict):
        raise ctx.fail(f"{path}.attrs", "must be a mapping of name: value", attrs)
    for name, v in attrs.items():
        if not isinstance(name, str) or not isinstance(v, (str, int, float, bool)):
            raise ctx.fail(f"{path}.attrs.{name}", "must be a string, number or boolean", v)
    return Claim(
        key=ctx.string(raw["key"], f"{path}.key", empty=False),
        value=ctx.string(_scalar_text(raw.get("value", "")), f"{path}.value"),
        category=ctx.string(raw.get("category", "fact"), f"{path}.category", empty=False),
        importance=(
            None
            if raw.get("importance") is None
            else ctx.number(raw["importance"], f"{path}.importance", 0.0, 1.0)
        ),
        subject=ctx.string(raw.get("subject", "owner"), f"{path}.subject", empty=False),
        confidence=ctx.number(raw.get("confidence", 0.9), f"{path}.confidence", 0.0, 1.0),
        noise=ctx.boolean(raw.get("noise", False), f"{path}.noise"),
        attrs=tuple(sorted(attrs.items())),
    )


def _scalar_text(v: Any) -> Any:
    """Allow ``value: 42`` as shorthand for the string "42" (but not lists or mappings)."""
    return str(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v


def _episode(ctx: _Ctx, raw: dict, path: str) -> Episode:
    ctx.mapping(raw, path, _EPISODE, ("id", "time", "text"))
    claims = ctx.items(raw.get("claims"), f"{path}.claims")
    return Episode(
        id=ctx.string(raw["id"], f"{path}.id", empty=False),
        time=ctx.number(raw["time"], f"{path}.time", lo=0),
        text=ctx.string(raw["text"], f"{path}.text"),
        claims=tuple(_claim(ctx, c, f"{path}.claims[{j}]") for j, c in enumerate(claims)),
        speaker=ctx.string(raw.get("speaker", "user"), f"{path}.speaker", empty=False),
        conversation=ctx.string(raw.get("conversation", ""), f"{path}.conversation"),
        project=ctx.string(raw.get("project", ""), f"{path}.project"),
    )


def _query(ctx: _Ctx, raw: dict, path: str) -> Query:
    ctx.mapping(raw, path, _QUERY, ("id", "time", "text"))
    keys = ctx.str_list(raw.get("keys", []), f"{path}.keys")
    answers = ctx.str_list(raw.get("answers", []), f"{path}.answers")
    if not keys and not answers:
        raise ctx.fail(path, "a query needs keys or answers (what would count as relevant?)", raw)
    return Query(
        id=ctx.string(raw["id"], f"{path}.id", empty=False),
        time=ctx.number(raw["time"], f"{path}.time", lo=0),
        text=ctx.string(raw["text"], f"{path}.text"),
        keys=keys,
        answers=answers,
        k=ctx.integer(raw.get("k", 10), f"{path}.k", lo=1, hi=MAX_K),
        subject=ctx.string(raw.get("subject", ""), f"{path}.subject"),
        group=ctx.string(raw.get("group", ""), f"{path}.group"),
        project=ctx.string(raw.get("project", ""), f"{path}.project"),
    )


def _action(cls: type, ctx: _Ctx, raw: Any, path: str):
    raw = ctx.mapping(raw, path, _ACTION, ("id", "time", "episode"))
    return cls(
        id=ctx.string(raw["id"], f"{path}.id", empty=False),
        time=ctx.number(raw["time"], f"{path}.time", lo=0),
        episode_id=ctx.string(raw["episode"], f"{path}.episode", empty=False),
    )


def parse(data: Any, *, file: str, name: str) -> Scripted:
    """Build a Scripted scenario from parsed YAML ``data``; ``file`` names it in errors."""
    ctx = _Ctx(file)
    data = ctx.mapping(data, "", _TOP, ("episodes",))
    description = ctx.string(data.get("description", ""), "description")
    if "\n" in description.strip():
        raise ctx.fail("description", "must be one line", description)
    if "name" in data:
        ctx.string(data["name"], "name", empty=False)
    horizon = ctx.number(data["horizon"], "horizon", lo=0) if "horizon" in data else None
    if "seed" in data:
        ctx.integer(data["seed"], "seed", hi=limits.MAX_SEED)

    located: list[tuple[Any, str]] = []  # (event, path) in file order
    builders: list[tuple[str, Callable[[_Ctx, dict, str], Any], bool]] = [
        ("episodes", _episode, True),
        ("queries", _query, True),
        ("forgets", lambda c, r, p: _action(Forget, c, r, p), False),
        ("protects", lambda c, r, p: _action(Protect, c, r, p), False),
        ("recovers", lambda c, r, p: _action(Recover, c, r, p), False),
    ]
    _check_size(ctx, data, [section for section, _, repeatable in builders if repeatable])
    for section, build, repeatable in builders:
        for i, raw in enumerate(ctx.items(data.get(section), section)):
            path = f"{section}[{i}]"
            if not isinstance(raw, dict):
                raise ctx.fail(path, "must be a mapping", raw)
            expanded = _expand(ctx, raw, path) if repeatable else [(raw, path)]
            for item, item_path in expanded:
                try:
                    located.append((build(ctx, item, item_path), item_path))
                except StreamError as e:  # an event's own validation (e.g. Claim fields)
                    raise ScenarioError(f"{file}: {item_path}: {e}") from None
    if not any(isinstance(ev, Episode) for ev, _ in located):
        raise ctx.fail("episodes", "a scenario needs at least one episode", data.get("episodes"))

    _check_references(ctx, located, horizon)
    order = sorted(
        range(len(located)), key=lambda i: (located[i][0].time, _RANK[type(located[i][0])], i)
    )
    events = tuple(located[i][0] for i in order)
    try:
        stream = Stream(events, name=name, horizon=horizon or 0.0, description=description)
    except StreamError as e:
        raise ScenarioError(f"{file}: {e}") from None

    expectations = _expect.parse_all(
        ctx.items(data.get("expect"), "expect"), file=file, stream=stream
    )
    stream = Stream(
        events,
        name=name,
        horizon=stream.horizon,
        description=description,
        meta=(("expect", [e.to_dict() for e in expectations]), ("source", file)),
    )
    return Scripted(stream, expectations, Path(file))


def _check_size(ctx: _Ctx, data: dict, repeatable: list[str]) -> None:
    """Refuse, before anything is built, a file whose ``repeat:`` items expand to more than
    MAX_SCRIPTED_EVENTS events (each is checked against MAX_REPEAT when expanded)."""
    total = 0
    for section in ("episodes", "queries", "forgets", "protects", "recovers"):
        items = data.get(section)
        for i, raw in enumerate(items if isinstance(items, list) else ()):
            n = raw.get("repeat", 1) if isinstance(raw, dict) and section in repeatable else 1
            total += ctx.integer(n, f"{section}[{i}].repeat", lo=1) if n != 1 else 1
    if total > limits.MAX_SCRIPTED_EVENTS:
        raise ScenarioError(
            f"{ctx.file}: the file expands to {total:,} events (with every repeat:); "
            f"the limit is {limits.MAX_SCRIPTED_EVENTS:,}"
        )


def _check_references(ctx: _Ctx, located: list[tuple[Any, str]], horizon: float | None) -> None:
    ids: dict[str, str] = {}
    episodes: dict[str, float] = {}
    for ev, path in located:
        if ev.id in ids:
            raise ctx.fail(f"{path}.id", f"id is already used by {ids[ev.id]}", ev.id)
        ids[ev.id] = path
        if isinstance(ev, Episode):
            episodes[ev.id] = ev.time
        if horizon is not None and ev.time > horizon:
            raise ctx.fail(f"{path}.time", f"is after the horizon ({horizon})", ev.time)
    asserted = {c.key for ev, _ in located if isinstance(ev, Episode) for c in ev.claims}
    for ev, path in located:
        if isinstance(ev, Query):
            for j, key in enumerate(ev.keys):
                if key not in asserted:
                    raise ctx.fail(f"{path}.keys[{j}]", "is stated by no claim of any episode", key)
        refs = (
            ev.answers
            if isinstance(ev, Query)
            else ()
            if isinstance(ev, Episode)
            else (ev.episode_id,)
        )
        field = "answers" if isinstance(ev, Query) else "episode"
        for ref in refs:
            if ref not in episodes:
                raise ctx.fail(f"{path}.{field}", "names no episode of this file", ref)
            if episodes[ref] > ev.time:
                raise ctx.fail(
                    f"{path}.{field}",
                    f"names episode {ref!r} at time {episodes[ref]}, which is later than "
                    f"this event's time {ev.time}",
                    ref,
                )


def load_file(path: str | Path, *, name: str | None = None) -> Scripted:
    """Load a scenario YAML file. ``name`` (default: the path) becomes the stream's name."""
    p = Path(path)
    text = limits.read_text(p, "scenario file", ScenarioError)
    data = read_yaml(text, str(p))
    return parse(data, file=str(p), name=name or str(path))


def read_yaml(text: str, file: str) -> Any:
    """Parse a scenario file's text strictly (memsim.engine.limits.read_yaml: no aliases,
    no duplicate keys, bounded depth, strings and numbers within the limits)."""
    return limits.read_yaml(text, file, ScenarioError)


def names() -> list[str]:
    """Names of the shipped scripted scenarios, sorted."""
    return sorted(p.stem for p in SCRIPTED_DIR.glob("*.yaml"))


def load(name: str) -> Scripted:
    """A shipped scenario by name (``name-preference``)."""
    path = SCRIPTED_DIR / f"{name}.yaml"
    if not path.is_file():
        raise UnknownIdError(f"unknown scripted scenario {name!r}; known: {', '.join(names())}")
    return load_file(path, name=f"scripted/{name}")


def describe(name: str) -> str:
    """The one-line description, without validating the whole file."""
    data = yaml.safe_load((SCRIPTED_DIR / f"{name}.yaml").read_text(encoding="utf-8"))
    return str(data.get("description", "")) if isinstance(data, dict) else ""


def _accepts(spec: str) -> str | None:
    """``scripted/NAME`` or a path ending in .yaml / .yml (in any case: ``.YAML`` too)."""
    yaml_file = spec.lower().endswith((".yaml", ".yml"))
    return spec if spec.startswith("scripted/") or yaml_file else None


def _load_spec(target: str, options: dict[str, Any], seed: int, name: str) -> Stream:
    if options:
        raise ScenarioError(
            f"scenario {name!r}: scripted scenarios take no options, got {sorted(options)}"
        )
    if target.startswith("scripted/"):
        return load(target[len("scripted/") :]).stream
    return load_file(target, name=name).stream


def _catalog() -> list[tuple[str, str]]:
    return [(f"scripted/{n}", describe(n)) for n in names()]


SOURCE = ScenarioSource(
    "scripted", _load_spec, _catalog, accepts=_accepts, check=_expect.verdicts, seeded=False
)
