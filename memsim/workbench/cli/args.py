"""What several verbs of the command line share: readers of comma lists, seeds, KEY=VALUE
overrides and index settings, and the arguments every study takes."""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from memsim.engine import limits
from memsim.engine.errors import ParamError
from memsim.engine.llm import Modes
from memsim.engine.params import coerce
from memsim.engine.registry import spec

from ..runs.execution import ENDPOINT, check_model_overrides
from ..runs.executors import worker_count

PROGRESS_HELP = (
    "a progress bar on stderr even when it is not a terminal (default: a bar on a terminal, "
    "elsewhere a plain line at most every 10 s)"
)


DASK_HELP = "run on Dask: local:N starts a local cluster of N workers, an address joins one"


FIELDS_HELP = (
    "comma list (default: every declared-range field; a field without a finite declared "
    "range moves from half to twice its default)"
)


def csv_list(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def policy_list(text: str, flag: str = "--policies") -> list[str]:
    """A comma list of policy ids; one that names none (``''``, ``','``) is refused, never
    read as "every policy"."""
    ids = csv_list(text)
    if not ids:
        raise ParamError(f"{flag} {text!r}: names no policy (give a comma list of ids)")
    return ids


def one_policy(text: str, command: str) -> str:
    """The one policy id ``run`` and ``sweep`` take (``--policies`` or ``--policy``)."""
    ids = policy_list(text)
    if len(ids) > 1:
        raise ParamError(
            f"--policies {text!r}: {command} takes one policy (compare runs several; a sweep "
            "file sweeps several)"
        )
    return ids[0]


def split_specs(texts: Sequence[str] | str | None) -> list[str]:
    """Scenario specs from comma lists, keeping each spec's own ``,key=value`` options:
    ``"synthetic:steady,episodes=200,scripted/x"`` -> ``["synthetic:steady,episodes=200",
    "scripted/x"]``. A token with ``=`` that starts no spec of its own belongs to the one
    before it."""
    if texts is None:
        return []
    out: list[str] = []
    for text in [texts] if isinstance(texts, str) else texts:
        for tok in (t.strip() for t in text.split(",")):
            if not tok:
                continue
            starts_spec = tok.startswith(("scripted/", "synthetic:", "locomo:")) or "=" not in tok
            if out and not starts_spec:
                out[-1] += "," + tok
            else:
                out.append(tok)
    return out


def parse_seeds(text: str, flag: str = "--seeds") -> list[int]:
    """``0,1,2`` or ``START:STOP``, each seed in [0, 2**63 - 1], at most
    memsim.engine.limits.MAX_SEEDS of them (counted before any list is built)."""
    return limits.parse_seeds(text, flag)


def seed_arg(flag: str) -> Callable[[str], int]:
    """An argparse ``type`` for one seed: an integer in [0, 2**63 - 1]. Its refusal is a
    MemsimError, which ``main`` prints as one line (argparse would add its usage)."""
    return lambda text: limits.parse_seed(text, flag)


def int_arg(flag: str, lo: int, hi: int) -> Callable[[str], int]:
    """An argparse ``type`` for an integer in [lo, hi], range checked before conversion."""
    return lambda text: limits.parse_int(text, flag, lo, hi)


def key_values(items: Sequence[str] | None, flag: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items or ():
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise ParamError(f"{flag}: expected KEY=VALUE, got {item!r}")
        out[name.strip()] = value.strip()
    return out


def llm_overrides(items: Sequence[str] | None) -> dict:
    """--llm KEY=VALUE: numbers for bands.* / faults.*, typed modes.*, a name for
    text_embedder; or --llm openai:BASE_URL,... / replay:PATH, a real model in place of
    the mock (memsim.engine.openai_llm; no mock option beside it)."""
    out: dict = {}
    mock_items = []
    for item in items or ():
        if not item.startswith(("openai:", "replay:")):
            mock_items.append(item)
        elif ENDPOINT in out:
            raise ParamError(f"--llm {item}: a second model; give one openai: or replay:")
        else:
            out[ENDPOINT] = item
    for k, v in key_values(mock_items, "--llm").items():
        if k == "text_embedder":
            out[k] = v
            continue
        if k.startswith("modes."):
            out[k] = _mode_value(k, v)
            continue
        out[k] = limits.parse_float(v, f"--llm {k}")
    check_model_overrides(out)
    return out


def _mode_value(key: str, text: str) -> Any:
    """--llm modes.NAME=VALUE read as the type of Modes.NAME (unknown NAME: one-line error)."""
    defaults = {f.name: f.default for f in dataclasses.fields(Modes)}
    name = key.partition(".")[2]
    if name not in defaults:
        raise ParamError(f"--llm {key}={text}: unknown mode; known: {', '.join(defaults)}")
    return coerce(f"--llm {key}", defaults[name], text)


def typed_params(policy: str, raw: dict[str, str]) -> dict:
    """Convert KEY=VALUE strings to the types of the policy's Params fields."""
    if not raw:
        return {}
    typed = spec(policy).load().Params.from_strings(raw)
    return {k: getattr(typed, k) for k in raw}


def policy_params(policies: Sequence[str], items: Sequence[str] | None) -> dict[str, Any]:
    """--param POLICY.FIELD=VALUE (repeatable) -> {"POLICY.FIELD": typed value}."""
    out: dict[str, Any] = {}
    by_policy: dict[str, dict[str, str]] = {}
    for key, value in key_values(items, "--param").items():
        policy, dot, field = key.partition(".")
        if not dot or not field:
            raise ParamError(f"--param {key}={value}: expected POLICY.FIELD=VALUE")
        if policy not in policies:
            raise ParamError(f"--param {key}: policy {policy!r} is not among --policies")
        by_policy.setdefault(policy, {})[field] = value
    for policy, raw in by_policy.items():
        for field, v in typed_params(policy, raw).items():
            out[f"{policy}.{field}"] = v
    return out


def index_settings(items: list[str] | None) -> dict[str, Any]:
    """--index mode=ivf|cones|exact [--index min_rows=N ...]: the candidate index; integers
    for every knob but mode (``items`` the KEY=VALUE strings; also benchmarks.simrun's)."""
    out: dict[str, Any] = {}
    for k, v in key_values(items, "--index").items():
        if k == "mode":
            out[k] = v
            continue
        if k not in ("min_rows", "nprobe", "audit_every"):
            raise ParamError(
                f"--index {k}: unknown setting; known: mode, min_rows, nprobe, audit_every"
            )
        out[k] = limits.parse_int(v, f"--index {k}")
    if out and "mode" not in out:
        raise ParamError("--index: give mode=ivf, cones or exact with the other settings")
    return out


RUN_SEED_HELP = (
    "seed of the stream's draws, the mock LLM's noise and ties (default 0; same seed, same results)"
)


def add_seed(s: argparse.ArgumentParser, help: str = RUN_SEED_HELP) -> None:
    """``--seed N`` (default 0), checked as every seed is (:func:`seed_arg`)."""
    s.add_argument("--seed", type=seed_arg("--seed"), default=0, help=help)


def add_progress(s: argparse.ArgumentParser) -> None:
    s.add_argument("--quiet", action="store_true", help="no progress: no bar, no progress lines")
    s.add_argument("--progress", action="store_true", help=PROGRESS_HELP)


def add_index(s: argparse.ArgumentParser, which: str = "") -> None:
    s.add_argument(
        "--index",
        action="append",
        metavar="KEY=VALUE",
        help="candidate index for large stores: mode=ivf|cones|exact, min_rows=N, nprobe=N, "
        f"audit_every=N (docs/performance.md){which}; default: the policy's own",
    )


def add_study(
    s: argparse.ArgumentParser,
    *,
    out: str,
    out_help: str,
    policies: str | None = None,
    scenarios_required: bool = True,
    seeds: bool = True,
) -> None:
    """What sweep, tune and sensitivity share: the policies (one command's wording), the
    scenarios, the seeds, the executor (--jobs, --dask), the candidate index (--index) and
    the output folder."""
    if policies:
        s.add_argument("--policies", required=True, help=policies)
    s.add_argument(
        "--scenarios",
        required=scenarios_required,
        help="scenario specs (comma list), e.g. synthetic:churn; a spec keeps its own "
        ",key=value options",
    )
    if seeds:
        s.add_argument("--seeds", default="0", help="comma list or START:STOP (default 0)")
    s.add_argument(
        "--jobs", type=worker_count, default=1, help="local worker processes (same results)"
    )
    s.add_argument("--dask", metavar="local:N|tcp://HOST:PORT", help=DASK_HELP)
    add_index(s)
    s.add_argument("--out", default=out, help=out_help)
