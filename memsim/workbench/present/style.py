"""The look shared by every figure and table: a fixed colour per policy (from the registry,
baselines in greys and dashed), registry order, readable scenario labels, evidence-age bins."""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from memsim.engine.registry import baseline_ids, specs

DPI = 120


# Colours come from the registry, never from a list of names: baselines wear greys, every
# other policy a colour of a fixed qualitative palette (tab10 minus its grey, then tab20's
# light shades), picked by a blake2b hash of its id (stable across runs and processes,
# unlike hash()). Registered policies are coloured in registry order; a collision moves to
# the next free colour, so up to 18 registered policies get distinct colours.
COLOURS = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#bcbd22",
    "#17becf",
    "#aec7e8",  # then tab20's light shades, so up to 18 policies get distinct colours
    "#ffbb78",
    "#98df8a",
    "#ff9896",
    "#c5b0d5",
    "#c49c94",
    "#f7b6d2",
    "#dbdb8d",
    "#9edae5",
)


GREYS = ("#7f7f7f", "#000000", "#bfbfbf", "#404040")


MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "h")


# Evidence-age bins (days) of the LoCoMo figure.
AGE_BINS = (0.0, 1.0, 7.0, 30.0, 90.0, math.inf)


def policy_id(name: str) -> str:
    """``pai-v1`` -> ``pai``: colours key on the id without its version."""
    return re.sub(r"-v\d+$", "", str(name))


def _hash_index(pid: str, n: int) -> int:
    return int.from_bytes(hashlib.blake2b(pid.encode(), digest_size=4).digest(), "big") % n


def registered_policies() -> list[Any]:
    return specs()


def palette() -> dict[str, str]:
    """Policy id -> colour for every registered policy (see ``COLOURS``)."""
    out: dict[str, str] = {}
    for spec_ in registered_policies():
        colours = GREYS if spec_.baseline else COLOURS
        used = set(out.values())
        i = _hash_index(spec_.id, len(colours))
        for k in range(len(colours)):
            c = colours[(i + k) % len(colours)]
            if c not in used:
                break
        out[spec_.id] = c
    return out


def is_baseline(name: str) -> bool:
    """Does the registry declare the policy a baseline (``PolicySpec.baseline``)?"""
    return policy_id(name) in baseline_ids()


def policy_color(name: str) -> str:
    """The policy's fixed colour; an unregistered id gets a stable colour from its hash."""
    pid = policy_id(name)
    known = palette()
    if pid in known:
        return known[pid]
    return COLOURS[_hash_index(pid, len(COLOURS))]


def policy_style(name: str) -> dict[str, Any]:
    """Line style of a policy: its colour; baselines dashed."""
    return {"color": policy_color(name), "linestyle": "--" if is_baseline(name) else "-"}


def ordered_policies(names: Iterable[str]) -> list[str]:
    """Registry order (baselines first, then by id), then anything unregistered sorted."""
    names = list(dict.fromkeys(str(n) for n in names))
    rank = {s.id: i for i, s in enumerate(registered_policies())}
    return sorted(names, key=lambda n: (rank.get(policy_id(n), len(rank)), n))


def new_figure(width: float, height: float):
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=DPI, layout="constrained")


def short_scenario(spec: str) -> str:
    """A readable label: ``locomo:/long/path/locomo-dev.json,sample=x`` ->
    ``locomo:locomo-dev.json,sample=x``."""
    s = str(spec)
    if s.startswith("locomo:"):
        head, _, rest = s[len("locomo:") :].partition(",")
        s = "locomo:" + Path(head).name + ("," + rest if rest else "")
    return s


def age_bin_labels(bins: Sequence[float] = AGE_BINS) -> list[str]:
    out = []
    for lo, hi in zip(bins[:-1], bins[1:]):
        out.append(f"≥{lo:g} d" if math.isinf(hi) else f"{lo:g}–{hi:g} d")
    return out
