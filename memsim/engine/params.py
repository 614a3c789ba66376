"""Frozen parameter dataclasses with declared ranges.

A policy's ``Params`` is a frozen dataclass whose defaults are its seed document's constants.
Fields are declared with :func:`param`, which records the legal range and the document
section it comes from; :class:`Params` validates every field on construction, so an
impossible value (a probability of 1.5, a negative half-life) fails at once with a message
naming the field and the value.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

from . import limits
from .errors import ParamError


def param(
    default: Any,
    *,
    lo: float | None = None,
    hi: float | None = None,
    lo_open: bool = False,
    hi_open: bool = False,
    choices: tuple[Any, ...] | None = None,
    doc: str = "",
) -> Any:
    """A Params field: ``default`` plus its legal range and the seed section it cites.

    ``lo``/``hi`` bound numeric values (closed unless ``lo_open``/``hi_open``); ``choices``
    restricts to a set of values. ``doc`` names the seed document section.
    """
    meta = {
        "lo": lo,
        "hi": hi,
        "lo_open": lo_open,
        "hi_open": hi_open,
        "choices": choices,
        "doc": doc,
    }
    if isinstance(default, (list, dict, set)):
        raise TypeError("mutable defaults are not allowed in Params; use a tuple")
    return dataclasses.field(default=default, metadata=meta)


@dataclasses.dataclass(frozen=True)
class Params:
    """Base class for policy parameters: validates ranges after construction."""

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            check_field(type(self).__qualname__, f, getattr(self, f.name))

    def replace(self, **changes: Any) -> Params:
        """A copy with some fields changed (validated); unknown names are an error."""
        known = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise ParamError(
                f"{type(self).__qualname__} has no parameter {unknown[0]!r}; "
                f"known: {', '.join(sorted(known))}"
            )
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}

    @classmethod
    def from_strings(cls, values: Mapping[str, str]) -> Params:
        """Build from ``KEY=VALUE`` strings (CLI), converting each to the field's type."""
        fields = {f.name: f for f in dataclasses.fields(cls)}
        default = cls()
        kwargs: dict[str, Any] = {}
        for name, text in values.items():
            if name not in fields:
                raise ParamError(
                    f"{cls.__qualname__} has no parameter {name!r}; "
                    f"known: {', '.join(sorted(fields))}"
                )
            kwargs[name] = coerce(f"{cls.__qualname__}.{name}", getattr(default, name), text)
        return cls(**kwargs)


def _plain(v: Any) -> Any:
    if isinstance(v, tuple):
        return [_plain(x) for x in v]
    return v


def coerce(where: str, like: Any, text: str) -> Any:
    """Convert ``text`` to the type of ``like`` (the default), or raise ParamError."""
    if isinstance(like, (int, float)) and len(text.strip()) > limits.MAX_NUMBER_TEXT:
        raise ParamError(f"{where}: cannot read {limits.shown(text)} as {type(like).__name__}")
    try:
        if isinstance(like, bool):
            low = text.strip().lower()
            if low in ("1", "true", "yes", "on"):
                return True
            if low in ("0", "false", "no", "off"):
                return False
            raise ValueError(text)
        if isinstance(like, int):
            return int(text)
        if isinstance(like, float):
            return float(text)
        if isinstance(like, tuple):
            return tuple(coerce(where, like[0] if like else "", t) for t in text.split(",") if t)
        if like is None:
            return text
        return type(like)(text)
    except ValueError:
        raise ParamError(
            f"{where}: cannot read {limits.shown(text)} as {type(like).__name__}"
        ) from None


def check_field(owner: str, f: dataclasses.Field[Any], value: Any) -> None:
    meta = f.metadata
    where = f"{owner}.{f.name}"
    choices = meta.get("choices")
    if choices is not None and value not in choices:
        raise ParamError(f"{where}={limits.shown(value)} is not one of {list(choices)}")
    lo, hi = meta.get("lo"), meta.get("hi")
    values = value if isinstance(value, tuple) else (value,)
    for v in values:  # inf/nan are never a usable constant, declared range or not
        if isinstance(v, float) and not math.isfinite(v):
            raise ParamError(
                f"{where}={limits.shown(value)} is {'NaN' if math.isnan(v) else 'not finite'}"
            )
    if lo is None and hi is None:
        return
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ParamError(f"{where}={limits.shown(value)} must be a number")
        if isinstance(v, float) and math.isnan(v):
            raise ParamError(f"{where}={limits.shown(value)} is NaN")
        if lo is not None and (v < lo or (meta.get("lo_open") and v == lo)):
            raise ParamError(f"{where}={limits.shown(value)} is outside {_range(meta)}")
        if hi is not None and (v > hi or (meta.get("hi_open") and v == hi)):
            raise ParamError(f"{where}={limits.shown(value)} is outside {_range(meta)}")


def _range(meta: Mapping[str, Any]) -> str:
    lo, hi = meta.get("lo"), meta.get("hi")
    left = "(" if meta.get("lo_open") else "["
    right = ")" if meta.get("hi_open") else "]"
    return f"{left}{'-inf' if lo is None else lo}, {'inf' if hi is None else hi}{right}"


def describe_range(f: dataclasses.Field[Any]) -> str:
    """A field's legal values in words: ``[0, 1]``, ``(0, inf)``, ``one of [...]``, ``any``."""
    meta = f.metadata
    if meta.get("choices") is not None:
        return f"one of {list(meta['choices'])}"
    if meta.get("lo") is not None or meta.get("hi") is not None:
        return _range(meta)
    if isinstance(f.default, bool):
        return "true/false"
    if isinstance(f.default, (int, float)):
        return "any finite"
    return "any"


def param_docs(cls: type) -> list[tuple[str, Any, str]]:
    """(name, default, seed section) for every field: used by docs and the claims table."""
    return [(f.name, f.default, f.metadata.get("doc", "")) for f in dataclasses.fields(cls)]
