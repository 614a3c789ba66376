"""Decay curves: how one memory's strength evolves under an access pattern (the ``memsim
curve`` command's driver, and how policies check their worked examples).

One memory is planted at day 0 from one episode (``policy.plant``); its claim is built from
``--memory KEY=VALUE`` attributes named as in the seed documents. ``key``, ``value``,
``category`` (alias ``type``), ``importance``, ``confidence`` and ``subject`` are Claim
fields; any other name (stability, state, salience, protected, ttl_policy, ...) goes to
``Claim.attrs`` and must be declared in the policy's ``curve_attributes``.

An access is a Query at that day asking the memory's key (k=1), run through
``policy.recall`` with all its bookkeeping, by the same runner as every experiment, so the
policy's scheduled maintenance runs too. Each requested day is measured at the end of that
day: after that day's access and any maintenance due that day.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from memsim.engine import mockllm
from memsim.engine.errors import MemsimError
from memsim.engine.events import Claim, Episode, Query, make_stream

if TYPE_CHECKING:
    from memsim.engine.policy import Policy

# The kinds of fact a planted memory may be (docs/scenarios.md): the mock LLM's categories, the
# topic-level "meta" it makes, and the seed documents' procedural, value and drive.
CATEGORIES = (*mockllm.CATEGORIES, "meta", "procedural", "value", "drive")
CLAIM_FIELDS = ("key", "value", "category", "importance", "confidence", "subject")
ALIASES = {"type": "category"}
DEFAULT_KEY = "curve.memory"


class CurveError(MemsimError):
    """A bad decay-curve request (pattern, days, memory attribute)."""


# ---------------------------------------------------------------------------- parsing


def _number(what: str, text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise CurveError(f"{what}: cannot read {text!r} as a number of days") from None
    if not math.isfinite(v) or v < 0:
        raise CurveError(f"{what}: {text!r} must be a finite number of days >= 0")
    return v


MAX_DAYS = 100_000  # observation days in one curve
MAX_ACCESSES = 10_000  # accesses of an every:N pattern (each one is a recall through the runner)


def parse_days(days: str | Sequence[float]) -> list[float]:
    """``"0,7,30"`` or ``"0:END:STEP"`` (END inclusive), or a sequence of numbers."""
    if not isinstance(days, str):
        out = [_number("--days", str(d)) for d in days]
    elif ":" in days:
        parts = days.split(":")
        if len(parts) != 3:
            raise CurveError(f"--days: {days!r} must be a comma list or START:END:STEP")
        lo, hi, step = (_number("--days", p) for p in parts)
        if step <= 0:
            raise CurveError(f"--days: step must be > 0 in {days!r}")
        if hi < lo:
            raise CurveError(f"--days: END < START in {days!r}")
        n = int(math.floor((hi - lo) / step + 1e-9))
        if n + 1 > MAX_DAYS:
            raise CurveError(
                f"--days: {days!r} asks for {n + 1:.3g} days; at most {MAX_DAYS} (raise STEP)"
            )
        out = [lo + i * step for i in range(n + 1)]
    else:
        items = [t.strip() for t in days.split(",") if t.strip()]
        out = [_number("--days", t) for t in items]
    if not out:
        raise CurveError(f"--days: no days in {days!r}")
    return sorted(set(out))


def access_days(pattern: str, end: float) -> list[float]:
    """``never``, ``every:N`` (days N, 2N, ... up to ``end``) or ``at:D1,D2,...``."""
    p = pattern.strip()
    if p == "never":
        return []
    kind, sep, rest = p.partition(":")
    if sep and kind == "every":
        n = _number("--pattern every:N", rest)
        if n <= 0:
            raise CurveError(f"--pattern: every:N needs N > 0, got {pattern!r}")
        count = math.floor(end / n + 1e-9)
        if count > MAX_ACCESSES:
            raise CurveError(
                f"--pattern {pattern!r}: {count:.3g} accesses up to day {end:g}; at most "
                f"{MAX_ACCESSES} (use every:N with N >= {end / MAX_ACCESSES:.3g})"
            )
        return [n * i for i in range(1, int(count) + 1)]
    if sep and kind == "at":
        items = [t.strip() for t in rest.split(",") if t.strip()]
        if not items:
            raise CurveError(f"--pattern: at: needs days, got {pattern!r}")
        return sorted(set(_number("--pattern at:", t) for t in items))
    raise CurveError(f"unknown --pattern {pattern!r}: use never, every:N or at:D1,D2,...")


def _pairs(items: Sequence[str] | Mapping[str, Any] | None, flag: str) -> dict[str, Any]:
    if items is None:
        return {}
    if isinstance(items, Mapping):
        return dict(items)
    out: dict[str, Any] = {}
    for item in items:
        name, sep, value = str(item).partition("=")
        if not sep or not name.strip():
            raise CurveError(f"{flag}: expected KEY=VALUE, got {item!r}")
        out[name.strip()] = value.strip()
    return out


def memory_claim(policy_cls: type[Policy[Any]], memory: Mapping[str, Any]) -> Claim:
    """The planted memory's claim from seed-named attributes (see the module docstring)."""
    allowed = policy_cls.curve_attributes
    fields: dict[str, Any] = {"key": DEFAULT_KEY, "value": "planted"}
    attrs: list[tuple[str, Any]] = []
    for name, value in memory.items():
        field = ALIASES.get(name, name)
        if field in CLAIM_FIELDS:
            if field in ("importance", "confidence"):
                try:
                    number = float(value)
                except (TypeError, ValueError):
                    raise CurveError(f"--memory {name}={value!r}: not a number") from None
                if not 0.0 <= number <= 1.0:
                    raise CurveError(f"--memory {name}={value!r} is outside [0, 1]")
                value = number
            elif field == "category" and value not in CATEGORIES:
                raise CurveError(
                    f"--memory {name}={value!r}: not a category; known: {', '.join(CATEGORIES)}"
                )
            elif not isinstance(value, str) or (field != "value" and not value):
                raise CurveError(f"--memory {name}={value!r}: expected a non-empty string")
            fields[field] = value
        elif name in allowed:
            attrs.append((name, value))
        else:
            known = sorted(set(CLAIM_FIELDS) | set(ALIASES) | allowed)
            raise CurveError(
                f"{policy_cls.__name__} has no memory attribute {name!r}; known: {', '.join(known)}"
            )
    if not fields["key"]:
        raise CurveError("--memory key= must not be empty: accesses ask the memory's key")
    return Claim(attrs=tuple(attrs), **fields)


# ---------------------------------------------------------------------------- the curve


def curve(
    policy: str,
    pattern: str,
    days: str | Sequence[float],
    memory: Mapping[str, Any] | Sequence[str] | None = None,
    params: Any = None,
    seed: int = 0,
) -> pd.DataFrame:
    """One row per requested day: ``day, strength, status, accessed, access_count``.

    ``strength`` is ``policy.strength(day)`` of the planted memory, ``status`` its status
    name, ``accessed`` whether the pattern accessed it that day (and recall returned it),
    ``access_count`` the store's count. ``params`` are the policy's Params fields (strings
    are converted with Params.from_strings); ``memory`` the planted memory's attributes.
    """
    from memsim.engine import registry, runner
    from memsim.engine.params import Params

    spec = registry.spec(policy)
    cls = spec.load()
    if isinstance(params, Params):
        p: Params = params
    else:
        raw_params = _pairs(params, "--param")
        if all(isinstance(v, str) for v in raw_params.values()):
            p = cls.Params.from_strings(raw_params)
        else:
            p = cls.Params().replace(**raw_params)
    claim = memory_claim(cls, _pairs(memory, "--memory"))
    wanted = parse_days(days)
    accesses = access_days(pattern, wanted[-1])

    pol = spec.make(p, seed=seed)
    episode = Episode("curve-plant", 0.0, f"{claim.key}: {claim.value}", claims=(claim,))
    try:
        row = pol.plant(episode, 0.0)
    except ValueError as e:
        raise CurveError(f"{policy}: cannot plant the memory: {e}") from None
    queries = [
        Query(
            f"access-{i}",
            float(d),
            f"what is {claim.key}?",
            keys=(claim.key,),
            k=1,
            subject=claim.subject,
        )
        for i, d in enumerate(accesses)
    ]
    stream = make_stream(queries, name=f"curve:{pattern}", horizon=wanted[-1])

    rows: list[dict[str, Any]] = []

    def observe(policy_obj: Any, t: float) -> None:
        s = policy_obj.store
        rows.append(
            {
                "day": t,
                "strength": float(policy_obj.strength(t)[row]),
                "status": s.status_of(row),
                "access_count": int(s["access_count"][row]),
            }
        )

    trace = runner.run(pol, stream, observe=wanted, observer=observe)
    hits = {q.time for q in trace.queries if row in q.ids.tolist()}
    frame = pd.DataFrame(rows, columns=["day", "strength", "status", "access_count"])
    frame.insert(3, "accessed", [d in hits for d in frame["day"]])
    return frame
