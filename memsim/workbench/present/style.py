"""The look shared by every figure and table: a fixed colour per policy (from the registry,
baselines in greys and dashed), registry order, readable scenario labels, evidence-age bins."""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from memsim.engine.errors import MemsimError
from memsim.engine.registry import baseline_ids, spec, specs

DPI = 120


# Colours come from the registry, never from a list of names: baselines wear greys; a variant
# (``PolicySpec.variant_of``) wears its parent's colour, drawn hollow and dotted, so a code
# variant is linked to the model it departs from; every other policy gets a colour of a fixed
# qualitative palette of strong, distinct hues (no light/dark pairs), picked by a blake2b hash
# of its id (stable across runs and processes, unlike hash()). A collision moves to the next
# free colour, so up to ten registered parents get distinct colours.
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
    "#393b79",
)


# dark enough to read as a drawn policy beside the light grey of context points
GREYS = ("#000000", "#6b6b6b", "#3a3a3a", "#8a8a8a")


MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "h")


# Evidence-age bins (days) of the LoCoMo figure.
AGE_BINS = (0.0, 1.0, 7.0, 30.0, 90.0, math.inf)


# The families a comparison groups its policies into, in the order figures and tables show them.
FAMILIES = ("seed, documented", "seed, as built", "reference model", "baseline", "bound")


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
    by_id = {s.id: s for s in registered_policies()}
    for spec_ in registered_policies():
        if spec_.variant_of in by_id:
            continue
        colours = GREYS if spec_.baseline else COLOURS
        used = set(out.values())
        i = _hash_index(spec_.id, len(colours))
        for k in range(len(colours)):
            c = colours[(i + k) % len(colours)]
            if c not in used:
                break
        out[spec_.id] = c
    for spec_ in registered_policies():
        if spec_.variant_of in by_id:
            out[spec_.id] = out[spec_.variant_of]
    return out


def variant_parent(name: str) -> str | None:
    """The registered policy ``name`` is a variant of, if any (``PolicySpec.variant_of``)."""
    pid = policy_id(name)
    for s in registered_policies():
        if s.id == pid:
            return s.variant_of or None
    return None


def policy_family(name: str) -> str:
    """One of ``FAMILIES``, from the registry: the clairvoyant reference is the bound, a
    baseline a baseline, a policy with a seed document a seed (as documented, or as built when
    it is the code variant of one), any other a reference model. The workbench's per-query
    bound column (``bound``) is the bound; an unregistered id is a reference model."""
    pid = policy_id(name)
    if pid == "bound":
        return "bound"
    try:
        s = spec(pid)
    except MemsimError:
        return "reference model"
    if s.clairvoyant:
        return "bound"
    if s.baseline:
        return "baseline"
    if s.seed_document:
        return "seed, as built" if s.variant_of else "seed, documented"
    return "reference model"


def family_groups(
    names: Iterable[str], families: Mapping[str, str] | None = None
) -> list[tuple[str, list[str]]]:
    """(family, policies in registry order) for every family present, in ``FAMILIES`` order
    (then any other family named in ``families``, which overrides the registry's)."""
    order = ordered_policies(names)
    fam = {p: (families or {}).get(p) or policy_family(p) for p in order}
    known = [*FAMILIES, *sorted(set(fam.values()) - set(FAMILIES))]
    return [(f, [p for p in order if fam[p] == f]) for f in known if f in fam.values()]


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
    """Line style of a policy: its colour; baselines dashed, variants dotted."""
    dash = "--" if is_baseline(name) else (":" if variant_parent(name) else "-")
    return {"color": policy_color(name), "linestyle": dash}


def hollow(name: str) -> bool:
    """Is the policy's marker drawn hollow (baselines and variants)?"""
    return is_baseline(name) or variant_parent(name) is not None


def direct_labels(
    ax: Any,
    points: Sequence[tuple[float, float, str, str]],
    *,
    min_gap: float | None = None,
    fontsize: float = 7.5,
    outside: bool = False,
) -> None:
    """Label points where they are drawn, instead of a legend: ``points`` are (x, y, text,
    colour) in data coordinates; each label sits to the right of its point (to the left in
    the right quarter of the axes) and labels on one side are pushed apart vertically by at
    least ``min_gap`` (axes fraction; by default one line of text), with a thin leader line
    when a label moved. ``outside``: every label just right of the axes (line ends). Call it
    after the axes' limits and scales are final."""
    to_axes = ax.transData + ax.transAxes.inverted()
    if min_gap is None:
        height_in = ax.get_position().height * ax.figure.get_figheight()
        min_gap = 1.2 * fontsize / 72 / max(height_in, 0.5)
    items: list[list[Any]] = []
    for x, y, text, colour in points:
        if not (math.isfinite(x) and math.isfinite(y)):
            continue
        ax_x, ax_y = to_axes.transform((x, y))
        items.append([ax_x, ax_y, ax_y, text, colour])
    # one stack for both sides: labels left and right of close points must not collide either
    items.sort(key=lambda it: it[1])
    for i in range(1, len(items)):
        items[i][2] = max(items[i][2], items[i - 1][2] + min_gap)
    top = 0.98
    if items and items[-1][2] > top:  # push the stack down from the top, gaps kept
        items[-1][2] = top
        for i in range(len(items) - 2, -1, -1):
            items[i][2] = min(items[i][2], items[i + 1][2] - min_gap)
    for ax_x, ax_y, label_y, text, colour in items:
        left = ax_x > 0.75 and not outside
        dx = -0.03 if left else 0.03
        moved = abs(label_y - ax_y) > 1e-3 and not outside
        ax.annotate(
            text,
            xy=(ax_x, ax_y),
            xycoords="axes fraction",
            xytext=(1.02 if outside else ax_x + dx, label_y),
            textcoords="axes fraction",
            ha="right" if left else "left",
            va="center",
            fontsize=fontsize,
            color=colour,
            arrowprops={"arrowstyle": "-", "color": colour, "lw": 0.5, "alpha": 0.6}
            if moved
            else None,
            annotation_clip=False,
        )


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


DEFAULT_PROTOCOL = "default"


def one_protocol(frame: Any, protocol: str = DEFAULT_PROTOCOL) -> Any:
    """The rows of ``frame`` (a DataFrame) run under ``protocol``; a table without a
    ``protocol`` column predates protocols and is all default."""
    if "protocol" not in frame.columns:
        return frame if protocol == DEFAULT_PROTOCOL else frame.iloc[0:0]
    return frame[frame["protocol"].astype(str) == protocol]
