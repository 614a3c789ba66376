"""The record-and-replay cache of a model's requests and replies (docs/real-models.md).

A cache is a folder. Every request the model adapter (memsim.engine.openai_llm) sends is
stored with its reply as one JSON file, content-addressed by the sha256 of its key (endpoint
kind, model, prompt name and version, canonical request JSON), under a two-character shard::

    PATH/entries/3f/3fa4...e1.json   {"key": {...}, "reply": {...}, "usage": {...}, ...}
    PATH/profiles.json               the request settings recorded (model, embed_model, ...)

Files are written to a temporary name and renamed into place (``os.replace``), so an
interrupted run leaves only whole entries; the same request recorded twice lands on the same
file. Entries hold what the server answered and never the API key (which no request body
carries), so a cache is safe to commit and share.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .errors import MemsimError

CACHE_FORMAT = 1  # the entries' layout; an entry of another format is refused
# Entries kept in memory once read, the least recently used dropped first (an embedding's
# entry holds its vector as JSON numbers, ~20 kB at 768 dimensions).
MEMO_ENTRIES = 4096


def canonical_json(obj: Any) -> str:
    """One text per JSON value: sorted keys, no spaces, non-ASCII kept (a value JSON has
    no type for, such as a policy's own claim attribute, as its ``str``)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def entry_key(kind: str, model: str, prompt: str, request: Mapping[str, Any]) -> dict[str, Any]:
    """What addresses an entry: the endpoint ``kind`` ("chat" or "embeddings"), the
    ``model``, the ``prompt`` (``name@version``, "" for embeddings) and the request body."""
    return {"kind": kind, "model": model, "prompt": prompt, "request": dict(request)}


def digest(key: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical_json(key).encode()).hexdigest()


class CacheMiss(MemsimError):
    """A replayed run asked for a request its cache does not hold."""


class LLMCache:
    """Entries under ``root`` (see the module docstring), read once each per instance."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self._memo: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._lock = threading.Lock()  # (embeddings are asked from several threads)

    def __getstate__(self) -> dict[str, Any]:
        return {"root": self.root}  # (a pickled copy reads entries again)

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.root = Path(state["root"])
        self._memo = OrderedDict()
        self._lock = threading.Lock()

    def _remember(self, name: str, entry: dict[str, Any]) -> None:
        with self._lock:
            self._memo[name] = entry
            self._memo.move_to_end(name)
            if len(self._memo) > MEMO_ENTRIES:
                self._memo.popitem(last=False)

    def path(self, name: str) -> Path:
        return self.root / "entries" / name[:2] / f"{name}.json"

    def get(self, key: Mapping[str, Any]) -> dict[str, Any] | None:
        """The entry recorded for ``key``, or None."""
        name = digest(key)
        with self._lock:
            hit = self._memo.get(name)
        if hit is not None:
            return dict(hit)
        path = self.path(name)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except OSError as e:
            raise MemsimError(f"LLM cache {path}: cannot read ({e.strerror})") from None
        try:
            entry = json.loads(text)
        except json.JSONDecodeError as e:
            raise MemsimError(f"LLM cache {path}: not JSON at line {e.lineno}: {e.msg}") from None
        found = entry.get("format") if isinstance(entry, dict) else None
        if found != CACHE_FORMAT:
            raise MemsimError(f"LLM cache {path}: format {found!r} is not {CACHE_FORMAT}")
        if entry.get("key") != json.loads(canonical_json(key)):
            raise MemsimError(f"LLM cache {path}: holds another request than its name says")
        self._remember(name, entry)
        return dict(entry)

    def put(self, key: Mapping[str, Any], entry: Mapping[str, Any]) -> dict[str, Any]:
        """Record ``entry`` (reply, usage, latency) for ``key``, atomically, and return the
        entry the cache now holds. The first reply recorded wins: when another run (another
        process) recorded this request meanwhile, its entry stays and is returned, so every
        run that used the request used the reply a replay gives. Only a recorded failure
        (``error``) is replaced."""
        name = digest(key)
        whole = {"format": CACHE_FORMAT, "key": json.loads(canonical_json(key)), **entry}
        text = json.dumps(whole, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
        path = self.path(name)
        with self._lock:
            self._memo.pop(name, None)  # (what is on disk decides)
        held = self.get(key)
        if held is not None and not held.get("error"):
            return held
        if held is None and write_new(path, text):
            self._remember(name, whole)
            return whole
        if held is None:  # (another process wrote it between the read and the write)
            held = self.get(key)
            if held is not None and not held.get("error"):
                return held
        write_atomic(path, text)  # (a recorded failure asked again)
        self._remember(name, whole)
        return whole

    def add_profile(self, profile: Mapping[str, Any]) -> None:
        """Note the request settings of a recording run in ``profiles.json`` (sorted, each
        once), so ``replay:PATH`` can find them."""
        profiles = self.profiles()
        p = json.loads(canonical_json(profile))
        if p in profiles:
            return
        profiles = sorted([*profiles, p], key=canonical_json)
        write_atomic(self.root / "profiles.json", json.dumps(profiles, indent=1) + "\n")

    def profiles(self) -> list[dict[str, Any]]:
        path = self.root / "profiles.json"
        if not path.exists():
            return []
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as e:
            raise MemsimError(f"LLM cache {path}: unreadable ({e})") from None
        if not isinstance(data, list) or not all(isinstance(p, dict) for p in data):
            raise MemsimError(f"LLM cache {path}: expected a list of objects")
        return data


def _written_beside(path: Path, text: str) -> str:
    """``text`` in a new temporary file in ``path``'s folder, flushed to disk: its name."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
    except BaseException:
        os.unlink(tmp)
        raise
    return tmp


def write_new(path: Path, text: str) -> bool:
    """``text`` into ``path`` unless it exists (False then), whole or not at all: written to
    a temporary file, then linked to its name (``os.link`` refuses an existing name)."""
    tmp = _written_beside(path, text)
    try:
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        except OSError:  # (a file system without hard links: a rename, nearly as safe)
            if path.exists():
                return False
            os.replace(tmp, path)
        return True
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_atomic(path: Path, text: str) -> None:
    """``text`` into ``path`` through a temporary file in its folder and ``os.replace``."""
    tmp = _written_beside(path, text)
    try:
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
