"""Fixed limits on what memsim accepts, and the readers that hold input to them.

Every size or number a user can give (a file, a seed list, a stream's length, a sample size)
is checked against a constant here before any work starts, so that what cannot finish is
refused at once, naming the size asked and the limit. The limits are fixed, not estimated
from free memory: the same input gets the same answer on every machine. docs/limits.md lists
them with their reasons.

Numbers are range-checked before any conversion (a 400-digit integer never reaches
``float()``, ``1e400`` is refused rather than turned into ``inf``), and every refusal is one
:class:`~memsim.engine.errors.MemsimError` line of bounded length: values are shown
truncated (:func:`shown`).
"""

from __future__ import annotations

import math
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from .errors import MemsimError, ParamError

# -- the limits (docs/limits.md) -------------------------------------------------------------
MAX_SEEDS = 10_000  # seeds of one command: --seeds, a sweep file's seeds
MAX_SEED = 2**63 - 1  # a seed is stored as a 64-bit integer in every result table
MAX_K = 1_000_000  # results one query may ask for
MAX_EPISODES = 1_000_000  # episodes of a synthetic stream (the ten-year stream's size)
MAX_QUERIES = 1_000_000  # queries of a synthetic stream
MAX_FACTS = 1_000_000  # fact keys of a synthetic stream (never more than its episodes)
MAX_TOPICS = 100_000  # topics of a synthetic stream
MAX_BURSTS = 1_000  # bursts per bursty fact of a synthetic stream
MAX_DAYS = 10**9  # horizon of a synthetic stream, in days (its arrays of times overflow beyond)
MAX_STREAM_EVENTS = 2_000_000  # events of any stream (episodes, queries and actions)
MAX_REPEAT = 100_000  # items one ``repeat:`` of a scenario file expands to
MAX_SCRIPTED_EVENTS = 200_000  # events of a scenario file after every ``repeat:`` expanded
MAX_WORKERS = 256  # worker processes of --jobs N or --dask local:N, each started at once
MAX_TRIALS = 10_000  # Optuna trials per policy of `memsim tune`
MAX_SOBOL = 2**16  # base samples of a Sobol' analysis (each costs fields + 2 points)
MAX_SWEEP_POINTS = 10_000  # parameter points of one policy in a sweep
MAX_STUDY_RUNS = 1_000_000  # runs of one study (points x scenarios x seeds)
MAX_FILE_BYTES = 64 * 2**20  # an input file (scenario, sweep, LoCoMo); locomo10.json is 2.8 MB
MAX_DEPTH = 40  # nesting levels of an input file (real files use fewer than 8)
MAX_TEXT = 100_000  # characters of one string in an input file
MAX_NUMBER_TEXT = 100  # characters of one number written as text (flag, spec option)
MAX_SHOWN = 120  # characters of a value quoted in an error message

_INT = re.compile(r"[+-]?[0-9]+")
# characters a text field may not hold: C0 controls but tab/newline/CR, DEL, C1 controls
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def shown(value: Any, limit: int = MAX_SHOWN) -> str:
    """``repr(value)``, cut to ``limit`` characters with the full length said: a huge value
    never makes a huge "one-line" error. Strings are read no further than needed."""
    if isinstance(value, str) and len(value) > limit:
        text = repr(value[:limit])
        return f"{text[:limit]}... ({len(value)} characters)"
    if isinstance(value, (list, tuple, dict)) and len(value) > limit:
        return f"a {type(value).__name__} of {len(value)} items"
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 300:
        return f"an integer of {len(str(abs(value)))} digits"
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def clip(text: str, limit: int = 300) -> str:
    """``text`` cut to ``limit`` characters (a message quoting a reader's own error)."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def at_most(
    where: str, what: str, asked: int, limit: int, error: type[MemsimError] = ParamError
) -> None:
    """Refuse a size over its limit, naming the size asked and the limit."""
    if asked > limit:
        raise error(f"{where}: {asked:,} {what} asked; the limit is {limit:,}")


# -- numbers ---------------------------------------------------------------------------------
def check_number(
    value: Any,
    where: str,
    lo: float | None = None,
    hi: float | None = None,
    *,
    integer: bool = False,
    error: type[MemsimError] = ParamError,
) -> Any:
    """``value`` (an int or float parsed from a file) if it is a finite number in [lo, hi]
    (an integer when ``integer``); else ``error`` naming ``where``. Python compares an int of
    any size with a float exactly, so a 400-digit integer is refused without converting."""
    kind = "an integer" if integer else "a finite number"
    if isinstance(value, bool) or not isinstance(value, int if integer else (int, float)):
        raise error(f"{where}: must be {kind}, got {shown(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise error(f"{where}: must be {kind}, got {shown(value)}")
    if isinstance(value, int) and not integer and abs(value) > 1e308:  # beyond float range
        raise error(f"{where}: must be {kind}, got {shown(value)}")
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        low = "-inf" if lo is None else f"{lo:g}" if isinstance(lo, float) else str(lo)
        high = "inf" if hi is None else f"{hi:g}" if isinstance(hi, float) else str(hi)
        raise error(f"{where}: must be {kind} in [{low}, {high}], got {shown(value)}")
    return value


def parse_int(
    text: str, where: str, lo: int | None = None, hi: int | None = None, *, what: str = ""
) -> int:
    """An integer written as text (a flag, a spec option), its length and range checked
    before conversion: ``x``, ``1e3``, a 5000-digit number and an out-of-range value are one
    line each naming ``where``."""
    t = text.strip()
    if len(t) > MAX_NUMBER_TEXT or not _INT.fullmatch(t):
        raise ParamError(f"{where}: cannot read {shown(text)} as {what or 'an integer'}")
    value = int(t)
    check_number(value, where, lo, hi, integer=True)
    return value


def parse_float(text: str, where: str, lo: float | None = None, hi: float | None = None) -> float:
    """A number written as text, finite and in [lo, hi]: ``1e400`` (inf), ``nan`` and a text
    of thousands of digits are refused naming ``where``."""
    t = text.strip()
    try:
        if len(t) > MAX_NUMBER_TEXT:
            raise ValueError
        value = float(t)
    except ValueError:
        raise ParamError(f"{where}: cannot read {shown(text)} as a number") from None
    return float(check_number(value, where, lo, hi))


def parse_seed(text: str, where: str = "--seed") -> int:
    """One seed: an integer in [0, MAX_SEED]."""
    return parse_int(text, where, 0, MAX_SEED, what="a seed (an integer >= 0)")


def parse_seeds(text: str, where: str = "--seeds") -> list[int]:
    """``0,1,2`` or ``START:STOP``: the seeds, each in [0, MAX_SEED] and at most MAX_SEEDS
    of them, the count checked before any list is built (``0:10000000000`` is refused at
    once)."""
    usage = "use 0,1,2 or START:STOP with STOP > START"
    if ":" in text:
        lo_text, _, hi_text = text.partition(":")
        lo = parse_seed(lo_text, f"{where} {shown(text)}: START")
        hi = parse_int(hi_text, f"{where} {shown(text)}: STOP", 0, MAX_SEED + 1)
        if hi <= lo:
            raise ParamError(f"{where}: {shown(text)} names no seed ({usage})")
        at_most(where, "seeds", hi - lo, MAX_SEEDS)
        return list(range(lo, hi))
    parts = [t.strip() for t in text.split(",") if t.strip()]
    if not parts:
        raise ParamError(f"{where}: {shown(text)} names no seed ({usage})")
    at_most(where, "seeds", len(parts), MAX_SEEDS)
    return [parse_seed(t, where) for t in parts]


def check_seeds(values: Any, where: str, error: type[MemsimError] = ParamError) -> list[int]:
    """A list of seeds read from a file: non-empty, at most MAX_SEEDS, each in [0, MAX_SEED]."""
    if not isinstance(values, list) or not values:
        raise error(f"{where}: must be a non-empty list of integers >= 0, got {shown(values)}")
    if len(values) > MAX_SEEDS:
        raise error(f"{where}: {len(values):,} seeds given; the limit is {MAX_SEEDS:,}")
    for i, v in enumerate(values):
        check_number(v, f"{where}[{i}]", 0, MAX_SEED, integer=True, error=error)
    return list(values)


# -- strings ---------------------------------------------------------------------------------
def check_text(value: str, where: str, error: type[MemsimError] = ParamError) -> str:
    """A string from a file: at most MAX_TEXT characters, no control characters (NUL and
    the like; tab and newline are fine), no lone surrogates (``"\\ud800"``, which no file
    or table can store)."""
    if len(value) > MAX_TEXT:
        raise error(f"{where}: a string of {len(value):,} characters; the limit is {MAX_TEXT:,}")
    for pattern, what in ((_CONTROL, "a control character"), (_SURROGATE, "a lone surrogate")):
        m = pattern.search(value)
        if m:
            raise error(
                f"{where}: holds {what} (U+{ord(m.group()):04X}) at position {m.start()}, "
                f"in {shown(value)}"
            )
    return value


def check_tree(data: Any, file: str, error: type[MemsimError] = ParamError) -> Any:
    """Walk parsed file data (without recursion): at most MAX_DEPTH levels, every string
    (keys too) passing :func:`check_text`, every number within float range. Returns
    ``data``."""
    stack: list[tuple[Any, str, int]] = [(data, "", 0)]
    while stack:
        node, path, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise error(f"{file}: {path or '(top level)'}: nested more than {MAX_DEPTH} levels")
        if isinstance(node, str):
            check_text(node, f"{file}: {path or '(top level)'}", error)
        elif isinstance(node, (int, float)) and not isinstance(node, bool):
            if not (isinstance(node, float) and math.isfinite(node)) and not (
                isinstance(node, int) and abs(node) <= 1e308
            ):
                raise error(
                    f"{file}: {path or '(top level)'}: must be a finite number within float range, "
                    f"got {shown(node)}"
                )
        elif isinstance(node, dict):
            for key, v in node.items():
                name = key if isinstance(key, str) else repr(key)
                if isinstance(key, str):
                    check_text(key, f"{file}: {path or '(top level)'}: a key", error)
                stack.append((v, f"{path}.{name}" if path else name, depth + 1))
        elif isinstance(node, list):
            stack.extend((v, f"{path}[{i}]", depth + 1) for i, v in enumerate(node))
    return data


# -- files -----------------------------------------------------------------------------------
def read_text(
    path: str | Path, what: str, error: type[MemsimError] = ParamError, *, missing: str = ""
) -> str:
    """The UTF-8 text of an input file, at most MAX_FILE_BYTES. A missing file, a directory,
    a symlink loop, a FIFO or device (``/dev/zero``) and a file too large are each one line
    saying which; nothing is read beyond the limit and nothing blocks on a FIFO."""
    p = Path(path)
    name = f"{what} {shown(str(p))}"
    try:
        st = os.stat(p)
    except FileNotFoundError:
        if os.path.islink(p):
            raise error(f"{name} is a symbolic link to nothing") from None
        raise error(f"{name} does not exist{missing}") from None
    except OSError as e:  # ELOOP, ENAMETOOLONG, EACCES on a parent
        raise error(f"{name} cannot be read: {_why(e)}") from None
    if stat.S_ISDIR(st.st_mode):
        raise error(f"{name} is a directory, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise error(f"{name} is {_kind(st.st_mode)}, not a regular file")
    if st.st_size > MAX_FILE_BYTES:
        raise error(f"{name} has {st.st_size:,} bytes; the limit is {MAX_FILE_BYTES:,}")
    try:
        with open(p, "rb") as f:
            raw = f.read(MAX_FILE_BYTES + 1)  # a file that grows while read is still bounded
    except OSError as e:
        raise error(f"{name} cannot be read: {_why(e)}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise error(f"{name} has more than {MAX_FILE_BYTES:,} bytes (the limit)")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise error(
            f"{name} is not UTF-8 text (byte {e.start}: {raw[e.start : e.start + 1]!r})"
        ) from None


def _why(e: OSError) -> str:
    return e.strerror or type(e).__name__


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


class _StrictLoader(yaml.SafeLoader):
    """safe_load, stricter: no anchors or aliases (an alias bomb expands exponentially
    before any schema check could run), at most MAX_DEPTH nesting levels (deeper nesting
    overflows the recursive parser), no duplicate keys (PyYAML keeps the last silently),
    and YAML 1.2 floats: ``1e300`` and ``1.0e15`` are numbers, not strings."""

    file = ""
    depth = 0
    error: type[MemsimError] = ParamError

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()  # type: ignore[no-untyped-call]
        if isinstance(event, yaml.NodeEvent) and (
            isinstance(event, yaml.AliasEvent) or event.anchor
        ):
            mark: Any = event.start_mark  # (set on every event the parser makes)
            raise self.error(
                f"{self.file}: line {mark.line + 1}: anchors and aliases "
                "(&name, *name) are not allowed; write the value out"
            )
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.error(
                f"{self.file}: line {event.start_mark.line + 1}: nested more than "
                f"{MAX_DEPTH} levels deep"
            )
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                dup = key in seen
                seen.add(key)
            except TypeError:  # an unhashable key: the schema check names it later
                continue
            if dup:
                raise self.error(
                    f"{self.file}: line {key_node.start_mark.line + 1}: duplicate key {shown(key)}"
                )
        return super().construct_mapping(node, deep=deep)


_StrictLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."),
)


def read_yaml(text: str, file: str, error: type[MemsimError] = ParamError) -> Any:
    """Parse an input file's YAML strictly (no aliases, no duplicate keys, bounded depth),
    then hold every string and number to the limits (:func:`check_tree`); errors are
    ``error`` naming ``file``, one line each."""
    loader = None
    try:
        loader = _StrictLoader(text)  # (its reader refuses control characters at once)
        loader.file = file
        loader.error = error
        data = loader.get_single_data()
    except yaml.YAMLError as e:
        raise error(f"{file}: not valid YAML: {clip(' '.join(str(e).split()))}") from None
    except RecursionError:  # deep nesting inside one scalar-free flow collection
        raise error(f"{file}: nested more than {MAX_DEPTH} levels deep") from None
    except ValueError as e:  # an integer of more than 4300 digits (int()'s own limit)
        raise error(f"{file}: a number cannot be read: {clip(str(e), 120)}") from None
    finally:
        if loader is not None:
            loader.dispose()
    return check_tree(data, file, error)


def read_json(text: str, file: str, error: type[MemsimError] = ParamError) -> Any:
    """Parse an input file's JSON, held to the limits as :func:`read_yaml` is."""
    import json

    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise error(f"{file}: not valid JSON: {clip(str(e))}") from None
    except RecursionError:
        raise error(f"{file}: nested more than {MAX_DEPTH} levels deep") from None
    except ValueError as e:  # an integer of more than 4300 digits (int()'s own limit)
        raise error(f"{file}: a number cannot be read: {clip(str(e), 120)}") from None
    return check_tree(data, file, error)


def iter_limits() -> Iterator[tuple[str, int]]:
    """(name, value) of every limit above, for the documentation test."""
    for name, value in globals().items():
        if name.startswith("MAX_") and isinstance(value, int):
            yield name, value
