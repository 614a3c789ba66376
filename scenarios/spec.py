"""Scenario spec strings: ``KIND:TARGET[,key=value...]`` and typed option parsing.

A spec names one stream uniformly for the CLI, the API and result paths:

    scripted/name-preference              a scripted scenario shipped with memsim
    path/to/file.yaml                     a scripted scenario file of your own
    synthetic:steady,episodes=2000        a synthetic profile with overrides
    locomo:/data/locomo10.json,sample=conv-26,query_time=evidence+7

Options are ``key=value`` pairs after the first comma; a LoCoMo path therefore cannot
contain a comma (rename the file).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from memsim.errors import ScenarioError


@dataclass(frozen=True)
class Spec:
    kind: str               # "scripted", "file", "synthetic" or "locomo"
    target: str             # scripted name, file path, profile name or LoCoMo path
    options: tuple[tuple[str, str], ...] = ()

    def option_dict(self) -> dict[str, str]:
        return dict(self.options)


def parse(spec: str) -> Spec:
    """Split a spec string; ScenarioError when it is empty or an option is not key=value."""
    if not isinstance(spec, str) or not spec.strip():
        raise ScenarioError(f"scenario spec must be a non-empty string, got {spec!r}")
    spec = spec.strip()
    if spec.startswith("scripted/"):
        return Spec("scripted", spec[len("scripted/"):])
    for kind in ("synthetic", "locomo"):
        if spec.startswith(kind + ":"):
            head, *rest = spec[len(kind) + 1:].split(",")
            return Spec(kind, head.strip(), _pairs(spec, rest))
    if spec.endswith((".yaml", ".yml")):
        return Spec("file", spec)
    raise ScenarioError(
        f"unknown scenario spec {spec!r}: use scripted/NAME, a .yaml file path, "
        "synthetic:PROFILE[,key=value...] or locomo:PATH[,key=value...] (see `memsim list`)")


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


def merge_options(spec_options: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """Options from the spec string, then keyword options (keywords win)."""
    merged: dict[str, Any] = dict(spec_options)
    merged.update(extra)
    return merged


def check_known(where: str, options: Mapping[str, Any], known: Mapping[str, str]) -> None:
    """ScenarioError naming the first unknown option and the known ones (with their help)."""
    for name in options:
        if name not in known:
            choices = ", ".join(f"{k} ({v})" for k, v in known.items())
            raise ScenarioError(f"{where}: unknown option {name!r}; known options: {choices}")
