"""Protocols: the named stream and mock choices a comparison runs under.

A protocol is one documented choice of how the simulated user asks and what the simulated
model returns, applied to the streams it concerns: spec options (``query_time`` of a LoCoMo
stream, ``text`` of a synthetic one) and mock-LLM overrides (``modes.query_value``, the
``bands``). Choices such as these decide rankings (keep-all orders a fact's versions at random
when a question carries no value; nothing is reinforced when every LoCoMo question is asked
after the conversation), so a comparison names the protocol of every number it reports.

Protocols vary one axis at a time from ``default``; ``a+b`` composes two (their options and
overrides together, on the streams both concern), and ``cross`` is every composition of one
choice per axis. ``standard`` is the set the standard suite runs: the default and each
axis's other choices alone.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memsim.engine.errors import ParamError
from memsim.engine.sources import parse

DEFAULT = "default"
PROTOCOL = "protocol"  # the column naming each row's protocol in comparison tables


@dataclass(frozen=True)
class Protocol:
    """One protocol: ``concerns`` the spec families it changes (empty: every stream),
    ``options`` set on those streams' specs, ``llm`` the mock overrides (a mapping, or a
    function giving one, for values read from a shipped measurement)."""

    name: str
    axis: str
    description: str
    concerns: tuple[str, ...] = ()
    options: tuple[tuple[str, str], ...] = ()
    llm: Mapping[str, Any] | Callable[[], Mapping[str, Any]] = field(default_factory=dict)

    def overrides(self) -> dict[str, Any]:
        return dict(self.llm() if callable(self.llm) else self.llm)

    def applies(self, spec: str) -> bool:
        return not self.concerns or spec_family(spec) in self.concerns


def _measured_bands() -> Mapping[str, Any]:
    from memsim.engine.bands import measured_band_overrides

    return measured_band_overrides()


AXES: dict[str, tuple[Protocol, ...]] = {
    "question": (
        Protocol(
            "value-aware",
            "question",
            "a question names part of the answer: the query vector carries 0.3 of the current "
            "value's direction (--llm modes.query_value=0.3); default: value-blind, every "
            "version of a fact is equally similar to the question",
            concerns=("synthetic",),
            llm={"modes.query_value": 0.3},
        ),
    ),
    "question time": tuple(
        Protocol(
            f"evidence-{days}d",
            "question time",
            f"each LoCoMo question is asked {days} day{'s' if days > 1 else ''} after its "
            "newest evidence turn (query_time=evidence+DAYS); default: one minute after the "
            "conversation's last turn",
            concerns=("locomo",),
            options=(("query_time", f"evidence+{days}"),),
        )
        for days in (1, 7, 30)
    ),
    "similarity": (
        Protocol(
            "measured-bands",
            "similarity",
            "the mock's claim similarities centred and spread as WordLlama measures them on "
            "the shipped sentence pairs (memsim bands); default: the bands the seed "
            "documents' thresholds assume (paraphrase 0.92, changed value 0.77, related 0.55)",
            concerns=("synthetic",),
            llm=_measured_bands,
        ),
        Protocol(
            "text",
            "similarity",
            "every claim rendered as a sentence and every question as a natural question, "
            "both embedded by the default text embedder (WordLlama) instead of the block "
            "embedder (synthetic option text=1)",
            concerns=("synthetic",),
            options=(("text", "1"),),
        ),
    ),
}

DEFAULT_PROTOCOL = Protocol(
    DEFAULT,
    "",
    "value-blind questions, LoCoMo questions at the end of the conversation, the mock's "
    "assumed similarity bands, block embedder for synthetic claims",
)

NAMED: dict[str, Protocol] = {
    DEFAULT: DEFAULT_PROTOCOL,
    **{p.name: p for axis in AXES.values() for p in axis},
}
SETS = ("standard", "cross")


def spec_family(spec: str) -> str:
    """``synthetic``, ``locomo``, ``scripted`` ...: the source kind that reads the spec (a
    scripted name or YAML file is ``scripted``); ScenarioError for a spec no source reads."""
    return parse(str(spec)).kind


def compose(parts: Sequence[Protocol]) -> Protocol:
    """One protocol doing every part's choices, on the streams every part concerns."""
    if len(parts) == 1:
        return parts[0]
    axes = [p.axis for p in parts]
    if len(set(axes)) < len(axes):
        raise ParamError(
            f"protocol {'+'.join(p.name for p in parts)}: two choices of one axis "
            f"({', '.join(sorted({a for a in axes if axes.count(a) > 1}))})"
        )
    concerns: set[str] | None = None
    for p in parts:
        if p.concerns:
            concerns = set(p.concerns) if concerns is None else concerns & set(p.concerns)
    if concerns is not None and not concerns:  # () would mean every stream
        raise ParamError(
            f"protocol {'+'.join(p.name for p in parts)}: its choices concern no stream "
            "together (" + "; ".join(f"{p.name}: {', '.join(p.concerns)}" for p in parts) + ")"
        )
    llm_parts = [p for p in parts if p.llm]

    def overrides() -> Mapping[str, Any]:
        out: dict[str, Any] = {}
        for p in llm_parts:
            out.update(p.overrides())
        return out

    return Protocol(
        "+".join(p.name for p in parts),
        "+".join(axes),
        "; ".join(p.description for p in parts),
        concerns=tuple(sorted(concerns or ())),
        options=tuple(o for p in parts for o in p.options),
        llm=overrides if llm_parts else {},
    )


def protocol(name: str) -> Protocol:
    """The protocol ``name`` (a named one, or ``a+b`` composed); ParamError otherwise."""
    parts = [n.strip() for n in str(name).split("+")]
    unknown = [n for n in parts if n not in NAMED or n == DEFAULT and len(parts) > 1]
    if unknown:
        raise ParamError(
            f"--protocols: unknown protocol {unknown[0]!r}; known: {', '.join(NAMED)}, "
            f"A+B to compose, or {' / '.join(SETS)}"
        )
    return compose([NAMED[n] for n in parts])


def protocol_set(text: str | None, default: str = DEFAULT) -> list[Protocol]:
    """The protocols a comma list names: names, ``a+b`` compositions, ``standard`` (the
    default and each axis's choices alone) and ``cross`` (every composition of one choice per
    axis, the default included); None gives ``default``."""
    names = [n.strip() for n in (text or default).split(",") if n.strip()]
    out: dict[str, Protocol] = {}
    for n in names:
        if n == "standard":
            items = list(NAMED.values())
        elif n == "cross":
            items = [DEFAULT_PROTOCOL]
            for combo in itertools.product(*[(None, *ps) for ps in AXES.values()]):
                chosen = [p for p in combo if p is not None]
                if chosen and _concerns_something(chosen):
                    items.append(compose(chosen))
        else:
            items = [protocol(n)]
        for p in items:
            out.setdefault(p.name, p)
    if not out:
        raise ParamError("--protocols: give at least one protocol")
    return list(out.values())


def _concerns_something(parts: Sequence[Protocol]) -> bool:
    families = [set(p.concerns) for p in parts if p.concerns]
    return not families or bool(set.intersection(*families))


def apply(p: Protocol, spec: str) -> str | None:
    """The spec run under ``p``: the spec itself for the default, the spec with ``p``'s
    options for a stream ``p`` concerns, None for one it does not (not run under ``p``)."""
    if p.name == DEFAULT:
        return spec
    if not p.applies(spec):
        return None
    if not p.options:
        return spec
    parsed = parse(spec)
    options = parsed.option_dict()
    for key, value in p.options:
        if key in options and options[key] != value:
            raise ParamError(
                f"protocol {p.name}: scenario {spec!r} sets {key}={options[key]}, the "
                f"protocol {key}={value}; leave the option to the protocol"
            )
        options[key] = value
    return f"{parsed.kind}:{parsed.target}" + "".join(f",{k}={v}" for k, v in options.items())


def merged_overrides(p: Protocol, user: Mapping[str, Any]) -> dict[str, Any]:
    """The user's ``--llm`` overrides with the protocol's; a key both set is an error (the
    protocol's name would misdescribe the run)."""
    own = p.overrides()
    clash = sorted(set(own) & set(user))
    if clash:
        raise ParamError(
            f"--llm {clash[0]}={user[clash[0]]}: protocol {p.name} sets {clash[0]} itself; "
            f"drop the override or run --protocols default"
        )
    return {**user, **own}


def describe() -> list[tuple[str, str, str]]:
    """(name, axis, description) of every named protocol, the default first."""
    return [(p.name, p.axis or "-", p.description) for p in NAMED.values()]
