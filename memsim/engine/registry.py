"""A registry of policy specs with versioned ids, loaded lazily from ``"module:Class"``.

``register(id="pai", version=1, entry_point="policies.pai:PersonalAI", ...)`` records a spec;
the class is imported only when a policy is made. An id with a version (``"pai-v1"``)
selects that version; a bare id (``"pai"``) the newest. Bump the version when behaviour
changes so old results stay interpretable.

Every policy, built-in or third-party, arrives through the ``memsim.policies`` entry-point
group of its distribution's ``pyproject.toml``: the entry point's name is the policy id and
its object a PolicySpec (or a callable that calls ``register``). Entry points are loaded by
name, only when that id is asked for; listing every policy loads them all. The engine
imports no policy package.

Capabilities that differ between policies (forget, protect, recover, ...) are declared on
the spec; the engine never branches on a policy's name or probes with hasattr.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, field
from importlib import metadata
from typing import TYPE_CHECKING, Any

from .errors import UnknownIdError
from .params import Params

if TYPE_CHECKING:
    from .policy import Policy

CAPABILITIES = frozenset({"forget", "protect", "recover"})
ENTRY_POINT_GROUP = "memsim.policies"
_ID = re.compile(r"^[a-z][a-z0-9_.]*(-[a-z0-9_.]+)*$")


@dataclass(frozen=True)
class PolicySpec:
    id: str
    version: int
    entry_point: str
    description: str = ""
    seed_document: str = ""
    capabilities: frozenset[str] = field(default_factory=frozenset)
    baseline: bool = False
    claims: str = ""  # module that registers the seed document's worked examples, if any
    # id of the policy this one is a variant of (e.g. the documented model a code variant
    # departs from); the workbench pairs the two through this field, never by name
    variant_of: str = ""
    # a reference allowed to read the stream's future queries and ground truth: the runner
    # calls its ``foresee(stream, footprint)`` before the run; no other spec is given them
    clairvoyant: bool = False

    def __post_init__(self) -> None:
        if not _ID.match(self.id) or re.search(r"-v\d+$", self.id):
            raise ValueError(f"bad policy id {self.id!r}: lowercase words, no trailing -vN")
        unknown = set(self.capabilities) - CAPABILITIES
        if unknown:
            raise ValueError(f"unknown capabilities {sorted(unknown)}")
        object.__setattr__(self, "capabilities", frozenset(self.capabilities))

    @property
    def full_id(self) -> str:
        return f"{self.id}-v{self.version}"

    def load(self) -> type[Policy[Any]]:
        module, _, name = self.entry_point.partition(":")
        cls: type[Policy[Any]] = getattr(importlib.import_module(module), name)
        return cls

    def make(self, params: Params | dict[str, Any] | None = None, **services: Any) -> Any:
        cls = self.load()
        if isinstance(params, dict):
            params = cls.Params(**params)
        policy: Any = cls(params, **services)
        policy.spec = self
        return policy


_SPECS: dict[str, PolicySpec] = {}
_loaded_plugins = False
_loaded_names: set[str] = set()
# names whose entry points were looked up (spec() asks per call; a scan of the installed
# distributions costs ~3 ms, several times per run of a sweep)
_scanned_names: set[str] = set()


def register(
    id: str,
    version: int,
    entry_point: str,
    *,
    description: str = "",
    seed_document: str = "",
    capabilities: frozenset[str] | set[str] = frozenset(),
    baseline: bool = False,
    variant_of: str = "",
) -> PolicySpec:
    spec = PolicySpec(
        id,
        int(version),
        entry_point,
        description,
        seed_document,
        frozenset(capabilities),
        baseline,
        variant_of=variant_of,
    )
    _SPECS[spec.full_id] = spec
    return spec


def _add(obj: Any) -> None:
    if isinstance(obj, PolicySpec):
        _SPECS[obj.full_id] = obj
    elif callable(obj):
        obj()
    else:
        raise TypeError(
            f"entry point of group {ENTRY_POINT_GROUP!r} must give a PolicySpec or "
            f"a callable that registers one, got {obj!r}"
        )


def _load_plugins(name: str | None = None) -> None:
    """Load the entry points named ``name`` (every one when None), each once."""
    global _loaded_plugins
    if _loaded_plugins or name in _scanned_names:
        return
    if name is not None:
        _scanned_names.add(name)
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        if name is not None and ep.name != name:
            continue
        key = ep.name or repr(ep)
        if key in _loaded_names:
            continue
        _loaded_names.add(key)
        _add(ep.load())
    if name is None:
        _loaded_plugins = True


def specs(references: bool = False) -> list[PolicySpec]:
    """The newest version of every registered policy, baselines first, then by id.
    Clairvoyant references (they read ground truth, so they are yardsticks, not competitors)
    are left out unless ``references``; ``spec(id)`` finds them by id."""
    _load_plugins()
    newest: dict[str, PolicySpec] = {}
    for s in _SPECS.values():
        if s.clairvoyant and not references:
            continue
        if s.id not in newest or s.version > newest[s.id].version:
            newest[s.id] = s
    return sorted(newest.values(), key=lambda s: (not s.baseline, s.id))


def spec(policy_id: str) -> PolicySpec:
    """The spec for ``"pai"`` (newest) or ``"pai-v1"``; UnknownIdError names the choices."""
    _load_plugins(re.sub(r"-v\d+$", "", policy_id))
    if policy_id in _SPECS:
        return _SPECS[policy_id]
    versions = [s for s in _SPECS.values() if s.id == policy_id]
    if versions:
        return max(versions, key=lambda s: s.version)
    if not _loaded_plugins:  # an id registered under another entry-point name
        _load_plugins()
        return spec(policy_id)
    known = ", ".join(s.id for s in specs(references=True))
    raise UnknownIdError(f"unknown policy id {policy_id!r}; known policies: {known}")


def variants_of(policy_id: str) -> list[PolicySpec]:
    """The newest spec of every registered policy declared a variant of ``policy_id``."""
    base = spec(policy_id).id
    return [s for s in specs() if s.variant_of == base]


def make(policy_id: str, params: Params | dict[str, Any] | None = None, **services: Any) -> Any:
    """Build a policy by id: ``make("pai", llm=MockLLM(seed=1), seed=1)``."""
    return spec(policy_id).make(params, **services)


def baseline_ids() -> frozenset[str]:
    """Ids of the registered policies whose spec says ``baseline=True``."""
    return frozenset(s.id for s in specs() if s.baseline)
