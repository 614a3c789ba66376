"""A real model behind the LLM protocol: an adapter for OpenAI-compatible endpoints.

llama.cpp's server, vLLM, Ollama, LM Studio and hosted providers all answer
``POST BASE_URL/chat/completions`` and ``POST BASE_URL/embeddings``. ``ModelLLM`` sends each
protocol call there (prompts in memsim/engine/prompts/, one JSON file per call, each asking
for JSON matching the schema it carries), validates every reply with a small explicit
validator, and turns an invalid or failed reply into a counted fault of the kind the mock
injects (memsim.engine.llm.Faults): ``extract_fail`` (extract returns None),
``embed_fail`` (the item's ``ok`` is False), ``invalid_answer`` (classify passes the raw
reply on; summarize answers NONE; synthesize keeps the last claim). It never crashes on a
reply; it stops with a one-line error when the server cannot be reached or refuses the
request itself (a wrong URL, model or key).

Every request and reply goes through a record-and-replay cache (memsim.engine.llm_cache):
``openai:`` answers from the cache where it can and records what it asks; ``replay:`` answers
only from it, so a recorded run replays offline, byte for byte (usage and latency are the
recorded ones, so costs replay too). The API key is read from the environment at each request
(``MEMSIM_OPENAI_API_KEY``, else ``OPENAI_API_KEY``, or the variable ``key_env=`` names) and is
never stored, recorded or printed.

Spec (``--llm`` on the command line, ``llm={"endpoint": ...}`` in the API)::

    openai:BASE_URL,model=NAME[,embed_model=NAME][,cache=PATH][,dim=N][,timeout=S]
        [,retries=N][,backoff=S][,concurrency=N][,response_format=json_schema|json_object|none]
        [,key_env=VAR][,known_keys=N]
    replay:PATH[,model=NAME]
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import http.client
import json
import math
import os
import re
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from .errors import MemsimError, ParamError
from .events import Claim, Episode, Query
from .llm import NONE, RELATIONS, Configurable, Embedded
from .llm_cache import CacheMiss, LLMCache, canonical_json, digest, entry_key

OPENAI, REPLAY = "openai", "replay"
KEY_ENVS = ("MEMSIM_OPENAI_API_KEY", "OPENAI_API_KEY")  # read in this order
DEFAULT_CACHE = "llm-cache"
RESPONSE_FORMATS = ("json_schema", "json_object", "none")

# Request settings fixed for every call: greedy decoding (the most reproducible a server
# offers) and a reply long enough for an episode's claims.
TEMPERATURE = 0.0
MAX_TOKENS = 1024

# The text embedded once to learn the embedding width when ``dim=`` is not given.
DIM_PROBE = "memsim embedding width probe"

# Categories an extracted claim may carry (the seed-neutral vocabulary of
# memsim.engine.events); a synthesized claim may also be "meta".
CATEGORIES = (
    "fact",
    "preference",
    "relationship",
    "decision",
    "event",
    "sentiment",
    "reminder",
    "procedural",
    "value",
    "drive",
)
_NUMBER = re.compile(r"[0-9]+")  # (str.isdigit also takes digits int() refuses, like "²")
_KEY = re.compile(r"[a-z0-9_\-]+(?:\.[a-z0-9_\-]+)*")
FAULT_KINDS = ("extract_fail", "embed_fail", "invalid_answer")
MAX_FAULT_MESSAGES = 50  # the first ones go to the manifest; every one is counted

# Answers a server gives when the request itself is wrong (URL, model, key): retrying or
# counting faults would hide it, so the run stops.
_REFUSED = (401, 403, 404)


# ----------------------------------------------------------------------------- options


@dataclass(frozen=True)
class ModelOptions:
    """A parsed ``openai:`` or ``replay:`` spec (see the module docstring). Only ``model``,
    ``embed_model`` and ``response_format`` shape requests (and so cache keys)."""

    mode: str
    base_url: str = ""
    model: str = ""
    embed_model: str = ""
    cache: str = DEFAULT_CACHE
    dim: int | None = None
    timeout: float = 120.0
    retries: int = 4
    backoff: float = 1.0
    concurrency: int = 4
    response_format: str = "json_schema"
    key_env: str = ""
    known_keys: int = 100

    def profile(self) -> dict[str, Any]:
        """The settings a replay needs to ask the same requests."""
        return {
            "model": self.model,
            "embed_model": self.embed_model,
            "response_format": self.response_format,
            "known_keys": self.known_keys,
        }


_INT_OPTIONS = {"dim": 1, "retries": 0, "concurrency": 1, "known_keys": 0}  # -> least value
_FLOAT_OPTIONS = {"timeout", "backoff"}
_TEXT_OPTIONS = {"model", "embed_model", "cache", "response_format", "key_env"}


def is_model_spec(text: Any) -> bool:
    """Whether ``text`` names a real model (``openai:...`` or ``replay:...``)."""
    return isinstance(text, str) and text.startswith((OPENAI + ":", REPLAY + ":"))


def parse_spec(text: str) -> ModelOptions:
    """``openai:BASE_URL,KEY=VALUE,...`` or ``replay:PATH[,model=NAME]``; a ParamError
    naming the part that is wrong."""
    mode, _, rest = text.partition(":")
    if mode not in (OPENAI, REPLAY) or not rest:
        raise ParamError(f"--llm {text!r}: expected openai:BASE_URL,model=NAME or replay:PATH")
    head, *items = [t.strip() for t in rest.split(",")]
    opts: dict[str, Any] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not value:
            raise ParamError(f"--llm {mode}: expected NAME=VALUE, got {item!r}")
        allowed = (
            _TEXT_OPTIONS | set(_INT_OPTIONS) | _FLOAT_OPTIONS if mode == OPENAI else {"model"}
        )
        if name not in allowed:
            raise ParamError(
                f"--llm {mode}: unknown option {name!r}; known: {', '.join(sorted(allowed))}"
            )
        opts[name] = _option_value(mode, name, value)
    if mode == REPLAY:
        return _replay_options(head, opts.get("model"))
    url = urllib.parse.urlsplit(head)
    if url.scheme not in ("http", "https") or not url.hostname:
        raise ParamError(f"--llm openai: BASE_URL must be http(s)://HOST[:PORT]/PATH, got {head!r}")
    if url.username or url.password:
        raise ParamError(
            f"--llm openai: BASE_URL must not carry credentials; put the API key in {KEY_ENVS[0]}"
        )
    if "model" not in opts:
        raise ParamError(f"--llm openai:{head}: model=NAME is required")
    if opts.get("response_format", "json_schema") not in RESPONSE_FORMATS:
        raise ParamError(
            f"--llm openai: response_format={opts['response_format']!r}; known: "
            f"{', '.join(RESPONSE_FORMATS)}"
        )
    opts.setdefault("embed_model", opts["model"])
    return ModelOptions(mode=OPENAI, base_url=head.rstrip("/"), **opts)


def _option_value(mode: str, name: str, value: str) -> Any:
    try:
        if name in _INT_OPTIONS:
            v: Any = int(value)
            ok = v >= _INT_OPTIONS[name]
        elif name in _FLOAT_OPTIONS:
            v = float(value)
            ok = math.isfinite(v) and (v > 0 if name == "timeout" else v >= 0)
        else:
            return value
    except ValueError:
        raise ParamError(f"--llm {mode}: {name}={value!r} is not a number") from None
    if not ok:
        raise ParamError(f"--llm {mode}: {name}={value!r} is out of range")
    return v


def _replay_options(path: str, model: str | None) -> ModelOptions:
    root = Path(path)
    if not root.is_dir():
        raise ParamError(f"--llm replay:{path}: no such cache folder")
    profiles = LLMCache(root).profiles()
    if model is not None:
        profiles = [p for p in profiles if p.get("model") == model]
    if len(profiles) != 1:
        models = sorted({str(p.get("model")) for p in LLMCache(root).profiles()})
        raise ParamError(
            f"--llm replay:{path}: "
            + (
                f"{len(profiles)} recorded settings match; name one with model=NAME "
                f"(recorded: {', '.join(models) or 'none'})"
            )
        )
    p = profiles[0]
    try:
        return ModelOptions(
            mode=REPLAY,
            model=str(p["model"]),
            embed_model=str(p["embed_model"]),
            response_format=str(p["response_format"]),
            known_keys=int(p["known_keys"]),
            cache=str(root),
        )
    except KeyError as e:
        raise ParamError(f"--llm replay:{path}: profiles.json lacks {e}") from None


# ----------------------------------------------------------------------------- prompts


@dataclass(frozen=True)
class Prompt:
    name: str
    version: int
    system: str
    instructions: str
    schema: dict[str, Any]

    @property
    def tag(self) -> str:
        return f"{self.name}@{self.version}"


@cache
def prompt(name: str) -> Prompt:
    """The prompt file ``memsim/engine/prompts/NAME.json``."""
    text = (PROMPT_DIR / f"{name}.json").read_text("utf-8")
    d = json.loads(text)
    return Prompt(d["name"], int(d["version"]), d["system"], d["instructions"], d["schema"])


PROMPT_DIR = Path(__file__).resolve().parent / "prompts"  # (package data)
PROMPTS = ("extract", "classify_index", "classify_relation", "summarize", "synthesize")


# ----------------------------------------------------------------------------- transport


class Unreachable(MemsimError):
    """The server cannot be reached, or refuses the request itself (URL, model or key)."""


@dataclass
class _Reply:
    """What one request gave: the parsed body (None with ``error`` when it failed after
    the retries), its usage and latency."""

    body: Any
    error: str
    tokens_in: int
    tokens_out: int
    latency_ms: int


class _Transport:
    """HTTP POSTs of JSON with timeouts and retries (exponential backoff, Retry-After
    honoured) on 429, 5xx, timeouts and dropped connections, through the cache."""

    def __init__(self, opts: ModelOptions) -> None:
        self.opts = opts
        self.cache = LLMCache(opts.cache)
        self._slots = threading.BoundedSemaphore(opts.concurrency)
        self._profiled = False

    def __getstate__(self) -> dict[str, Any]:
        return {"opts": self.opts, "cache": self.cache, "_profiled": self._profiled}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._slots = threading.BoundedSemaphore(self.opts.concurrency)

    def ask(self, kind: str, prompt_tag: str, body: Mapping[str, Any], model: str) -> _Reply:
        key = entry_key(kind, model, prompt_tag, body)
        entry = self.cache.get(key)
        if self.opts.mode == REPLAY:
            if entry is None:
                raise CacheMiss(
                    f"--llm replay:{self.opts.cache}: no recorded reply for {kind} "
                    f"{prompt_tag or model} request {digest(key)[:16]} "
                    f"({self.cache.path(digest(key))})"
                )
        elif entry is None or entry.get("error"):  # a recorded failure is asked again live
            if not self._profiled:
                self.cache.add_profile(self.opts.profile())
                self._profiled = True
            entry = self.cache.put(key, self._post(kind, body))
        usage = entry.get("usage") or {}
        return _Reply(
            body=entry.get("reply"),
            error=str(entry.get("error") or ""),
            tokens_in=int(usage.get("tokens_in", 0)),
            tokens_out=int(usage.get("tokens_out", 0)),
            latency_ms=int(entry.get("latency_ms", 0)),
        )

    def _post(self, kind: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """One request, retried; the entry to record (``reply`` or ``error``)."""
        url = f"{self.opts.base_url}/{'chat/completions' if kind == 'chat' else 'embeddings'}"
        data = canonical_json(body).encode()
        error = ""
        start = time.monotonic()
        for attempt in range(self.opts.retries + 1):
            wait = self.opts.backoff * (2**attempt)
            try:
                with self._slots:
                    status, text, retry_after = self._send(url, data)
            except TimeoutError:
                error = f"no reply within {self.opts.timeout:g} s"
            except (ConnectionResetError, http.client.RemoteDisconnected, BrokenPipeError) as e:
                error = f"connection dropped ({type(e).__name__})"
            except (urllib.error.URLError, ConnectionError, OSError) as e:
                reason = e.reason if isinstance(e, urllib.error.URLError) else e
                if isinstance(reason, TimeoutError):
                    error = f"no reply within {self.opts.timeout:g} s"
                else:
                    error = f"cannot connect ({_safe(str(reason), self.opts.key_env)})"
                    if attempt == self.opts.retries:
                        raise Unreachable(f"--llm openai: {url}: {error}") from None
            else:
                if status == 200:
                    latency = round((time.monotonic() - start) * 1000)
                    return _recorded(text, latency)
                message = _safe(" ".join(text.split())[:200], self.opts.key_env)
                if status in _REFUSED:
                    raise Unreachable(f"--llm openai: {url} answered HTTP {status}: {message}")
                error = f"HTTP {status}: {message}"
                if status != 429 and status < 500:
                    break  # (a request the server cannot serve: asking again gives the same)
                if retry_after is not None:
                    wait = max(wait, retry_after)
            if attempt < self.opts.retries:
                time.sleep(min(wait, 60.0))
        latency = round((time.monotonic() - start) * 1000)
        return {"error": error, "latency_ms": latency, "usage": {"tokens_in": 0, "tokens_out": 0}}

    def _send(self, url: str, data: bytes) -> tuple[int, str, float | None]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        key = api_key(self.opts.key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        req = urllib.request.Request(url, data=data, headers=headers, method="POST")
        # a local server (loopback address) is asked directly, never through a proxy of the
        # environment (a remote one honours http(s)_proxy as urllib does)
        local = urllib.parse.urlsplit(url).hostname in ("127.0.0.1", "localhost", "::1")
        opener = urllib.request.build_opener(*([urllib.request.ProxyHandler({})] if local else []))
        try:
            with opener.open(req, timeout=self.opts.timeout) as resp:
                return resp.status, resp.read().decode("utf-8", "replace"), None
        except urllib.error.HTTPError as e:
            text = e.read().decode("utf-8", "replace") if e.fp is not None else ""
            return e.code, text, _retry_after(e.headers.get("Retry-After"))


def api_key(key_env: str = "") -> str:
    for name in (key_env,) if key_env else KEY_ENVS:
        value = os.environ.get(name, "")
        if value:
            return value
    return ""


def _safe(text: str, key_env: str = "") -> str:
    """``text`` with any API key in the environment blanked out (a server may echo it)."""
    for name in (*KEY_ENVS, key_env) if key_env else KEY_ENVS:
        key = os.environ.get(name, "")
        if key:
            text = text.replace(key, "***")
    return text


def _retry_after(value: str | None) -> float | None:
    """Retry-After in seconds (an HTTP date is not honoured: the backoff applies)."""
    try:
        seconds = float(value) if value is not None else math.nan
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def _recorded(text: str, latency_ms: int) -> dict[str, Any]:
    """A 200 reply as recorded: the parsed body (the raw text when it is not JSON), usage
    and latency."""
    try:
        body: Any = json.loads(text)
    except json.JSONDecodeError:
        body = {"unparsed": text}
    usage = body.get("usage") if isinstance(body, dict) else None
    usage = usage if isinstance(usage, dict) else {}
    tokens_in = usage.get("prompt_tokens", 0)
    tokens_out = usage.get("completion_tokens", 0)
    return {
        "reply": body,
        "usage": {
            "tokens_in": tokens_in if isinstance(tokens_in, int) and tokens_in >= 0 else 0,
            "tokens_out": tokens_out if isinstance(tokens_out, int) and tokens_out >= 0 else 0,
        },
        "latency_ms": latency_ms,
    }


# ----------------------------------------------------------------------------- validators


class Invalid(Exception):
    """A reply that does not match its schema (the message says where)."""


def _get(obj: Any, name: str, kind: type | tuple[type, ...], where: str) -> Any:
    if not isinstance(obj, dict) or name not in obj:
        raise Invalid(f"{where}: missing {name!r}")
    value = obj[name]
    if not isinstance(value, kind) or (isinstance(value, bool) and bool not in _tuple(kind)):
        raise Invalid(f"{where}.{name}: expected {_names(kind)}, got {value!r:.60}")
    return value


def _tuple(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _names(kind: type | tuple[type, ...]) -> str:
    return " or ".join(k.__name__ for k in _tuple(kind))


def _unit(obj: Any, name: str, where: str, nullable: bool = False) -> float | None:
    kinds: tuple[type, ...] = (int, float, type(None)) if nullable else (int, float)
    v = _get(obj, name, kinds, where)
    if v is None:
        return None
    if not 0.0 <= v <= 1.0:
        raise Invalid(f"{where}.{name}: {v!r} is outside [0, 1]")
    return float(v)


def chat_content(body: Any) -> str:
    """The assistant message of a chat completion body."""
    if isinstance(body, dict) and "unparsed" in body:
        raise Invalid(f"reply is not JSON: {str(body['unparsed'])[:60]!r}")
    choices = _get(body, "choices", list, "reply")
    if not choices:
        raise Invalid("reply.choices is empty")
    message = _get(choices[0], "message", dict, "reply.choices[0]")
    content = _get(message, "content", str, "reply.choices[0].message")
    return str(content)


def reply_json(body: Any) -> Any:
    """The JSON document the model wrote (a fenced ``json`` block is unwrapped)."""
    text = chat_content(body).strip()
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise Invalid(f"content is not JSON ({e.msg} at column {e.colno}): {text[:60]!r}") from None


def _claim_key(obj: Any, where: str, text_only: bool = False) -> str:
    """A claim's key as dotted lowercase words (spaces become ``_``); "" only where a
    text-only claim may come back (``text_only``)."""
    key = " ".join(_get(obj, "key", str, where).strip().lower().split()).replace(" ", "_")
    if key == "" and text_only:
        return key
    if not _KEY.fullmatch(key):
        raise Invalid(f"{where}.key: {obj['key']!r:.60} is not dotted lowercase words")
    return key


def _category(obj: Any, where: str, allowed: Sequence[str]) -> str:
    cat = _get(obj, "category", str, where).strip().lower()
    if cat not in allowed:
        raise Invalid(f"{where}.category: {cat!r:.40} is not one of {', '.join(allowed)}")
    return str(cat)


def _attrs(obj: Any, where: str) -> tuple[tuple[str, Any], ...]:
    attrs = _get(obj, "attributes", dict, where)
    out = []
    for name, value in sorted(attrs.items()):
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            value = tuple(value)
        elif not isinstance(value, (str, int, float, bool)) or (
            isinstance(value, float) and not math.isfinite(value)
        ):
            raise Invalid(f"{where}.attributes.{name}: {value!r:.40} is not a string or number")
        out.append((str(name), value))
    return tuple(out)


def valid_extraction(doc: Any) -> list[dict[str, Any]]:
    """The fields of each claim of an ``extract`` reply."""
    claims = _get(doc, "claims", list, "claims document")
    out = []
    for i, c in enumerate(claims):
        where = f"claims[{i}]"
        if not isinstance(c, dict):
            raise Invalid(f"{where}: expected an object, got {c!r:.60}")
        out.append(
            {
                "key": _claim_key(c, where),
                "value": _get(c, "value", str, where).strip(),
                "category": _category(c, where, CATEGORIES),
                "importance": _unit(c, "importance", where, nullable=True),
                "confidence": _unit(c, "confidence", where),
                "subject": _get(c, "subject", str, where).strip().lower() or "owner",
                "noise": _get(c, "noise", bool, where),
                "attrs": _attrs(c, where),
            }
        )
    return out


def valid_index(doc: Any, n: int) -> str:
    """An ``index`` reply: NONE or a 1-based candidate number as a string."""
    answer = _get(doc, "answer", (str, int), "answer document")
    text = str(answer).strip().upper()
    if text == NONE:
        return NONE
    if not _NUMBER.fullmatch(text) or not 1 <= int(text) <= n:
        raise Invalid(f"answer: {answer!r:.40} is neither NONE nor a candidate in 1..{n}")
    return str(int(text))


def valid_relations(doc: Any, n: int) -> list[str]:
    """A ``relation`` reply: one of RELATIONS per candidate (wrong ones kept as given)."""
    rel = _get(doc, "relations", list, "relations document")
    if len(rel) != n:
        raise Invalid(f"relations: {len(rel)} given for {n} candidates")
    return [str(r).strip().upper() if isinstance(r, str) else repr(r) for r in rel]


def valid_summary(doc: Any) -> str:
    summary = _get(doc, "summary", str, "summary document").strip()
    if not summary:
        raise Invalid("summary: empty")
    return NONE if summary.upper().strip(".") == NONE else str(summary)


def valid_synthesis(doc: Any) -> dict[str, Any]:
    c = _get(doc, "claim", dict, "claim document")
    return {
        "key": _claim_key(c, "claim", text_only=True),
        "value": _get(c, "value", str, "claim").strip(),
        "category": _category(c, "claim", (*CATEGORIES, "meta")),
        "subject": _get(c, "subject", str, "claim").strip().lower() or "owner",
    }


def valid_embedding(body: Any, dim: int | None) -> np.ndarray:
    """The unit float32 vector of an embeddings reply."""
    if isinstance(body, dict) and "unparsed" in body:
        raise Invalid(f"reply is not JSON: {str(body['unparsed'])[:60]!r}")
    data = _get(body, "data", list, "reply")
    if len(data) != 1:
        raise Invalid(f"reply.data: {len(data)} embeddings for 1 input")
    vec = _get(data[0], "embedding", list, "reply.data[0]")
    if not vec or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in vec):
        raise Invalid("reply.data[0].embedding: not a list of numbers")
    if dim is not None and len(vec) != dim:
        raise Invalid(f"reply.data[0].embedding: {len(vec)} numbers, expected {dim}")
    try:
        row = np.asarray(vec, dtype=np.float64)
    except OverflowError:  # (an integer past float range)
        raise Invalid("reply.data[0].embedding: a number out of float range") from None
    norm = float(np.linalg.norm(row))
    if not math.isfinite(norm) or norm == 0.0:
        raise Invalid("reply.data[0].embedding: zero or not finite")
    return (row / norm).astype(np.float32)


# ----------------------------------------------------------------------------- the adapter


def claim_view(c: Claim) -> dict[str, Any]:
    """What a prompt shows of a claim (what the model itself extracted)."""
    view: dict[str, Any] = {
        "key": c.key,
        "value": c.value,
        "category": c.category,
        "subject": c.subject,
    }
    if c.attrs:
        view["attributes"] = {k: list(v) if isinstance(v, tuple) else v for k, v in c.attrs}
    return view


def embed_text(item: Claim | str) -> str:
    """The text embedded for an item: a keyed claim as ``key: value``, a text-only claim
    as its value, a string as itself."""
    if isinstance(item, Claim):
        return f"{item.key}: {item.value}" if item.key else item.value
    return item


@dataclass
class _Meter:
    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    latency_ms: int = 0

    def add(self, r: _Reply) -> None:
        self.calls += 1
        self.tokens_in += r.tokens_in
        self.tokens_out += r.tokens_out
        self.latency_ms += r.latency_ms


METHODS = ("extract", "embed", "embed_query", "classify", "summarize", "synthesize")


class ModelLLM(Configurable):
    """The LLM protocol answered by an OpenAI-compatible server (module docstring).

    ``seed`` is the run's (the protocol carries it; requests do not, so runs of every seed
    share recorded replies). ``dim`` is the embedding width: given, or learnt from one
    probe embedding at first use."""

    def __init__(self, spec: str | ModelOptions, seed: int = 0) -> None:
        self.options = parse_spec(spec) if isinstance(spec, str) else spec
        self.seed = int(seed)
        self._transport = _Transport(self.options)
        self._dim = self.options.dim
        self.meters = {m: _Meter() for m in METHODS}
        self.faults = dict.fromkeys(FAULT_KINDS, 0)
        self.fault_messages: list[str] = []
        # the keys extraction has returned so far, in order of first use (entity resolution:
        # the extract prompt lists the latest ``known_keys`` of them to reuse)
        self.keys_seen: dict[str, None] = {}

    # -- bookkeeping -------------------------------------------------------------------
    def config(self) -> dict[str, Any]:
        o = self.options
        return {
            "llm": o.mode,
            "seed": self.seed,
            "dim": self.dim,
            **({"base_url": o.base_url} if o.mode == OPENAI else {}),
            "model": o.model,
            "embed_model": o.embed_model,
            "response_format": o.response_format,
            "known_keys": o.known_keys,
            "prompts": {p: prompt(p).tag for p in PROMPTS},
        }

    def usage(self) -> dict[str, Any]:
        """Calls, tokens in and out and latency (ms) per protocol method, from the
        server's own usage fields; the faults counted, and the first messages."""
        per = {m: dataclasses.asdict(v) for m, v in self.meters.items() if v.calls}
        total = {
            f: sum(v[f] for v in per.values())
            for f in ("calls", "tokens_in", "tokens_out", "latency_ms")
        }
        return {
            "methods": per,
            "total": total,
            "faults": dict(self.faults),
            "fault_messages": list(self.fault_messages),
        }

    def _fault(self, kind: str, method: str, what: str, reason: str) -> None:
        self.faults[kind] += 1
        if len(self.fault_messages) < MAX_FAULT_MESSAGES:
            self.fault_messages.append(f"{method} {what}: {kind}: {reason}")

    # -- requests ------------------------------------------------------------------------
    def _chat(self, name: str, method: str, payload: Mapping[str, Any]) -> _Reply:
        p = prompt(name)
        o = self.options
        body: dict[str, Any] = {
            "model": o.model,
            "messages": [
                {"role": "system", "content": p.system},
                {
                    "role": "user",
                    "content": f"{p.instructions}\n\nINPUT:\n{canonical_json(payload)}",
                },
            ],
            "temperature": TEMPERATURE,
            "max_tokens": MAX_TOKENS,
        }
        if o.response_format == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": p.name, "schema": p.schema, "strict": True},
            }
        elif o.response_format == "json_object":
            body["response_format"] = {"type": "json_object"}
        reply = self._transport.ask("chat", p.tag, body, o.model)
        self.meters[method].add(reply)
        return reply

    def _answer(
        self, name: str, method: str, payload: Mapping[str, Any], validate: Callable[[Any], Any]
    ) -> tuple[Any, str]:
        """(validated answer, "") or (None, why not)."""
        reply = self._chat(name, method, payload)
        if reply.error:
            return None, reply.error
        try:
            return validate(reply_json(reply.body)), ""
        except Invalid as e:
            return None, str(e)

    def _embed_one(self, text: str) -> tuple[_Reply, np.ndarray | None, str]:
        o = self.options
        reply = self._transport.ask(
            "embeddings", "", {"model": o.embed_model, "input": text}, o.embed_model
        )
        if reply.error:
            return reply, None, reply.error
        try:
            return reply, valid_embedding(reply.body, self._dim), ""
        except Invalid as e:
            return reply, None, str(e)

    @property
    def dim(self) -> int:
        if self._dim is None:
            reply, _, error = self._embed_one(DIM_PROBE)
            body = reply.body
            try:
                width = len(body["data"][0]["embedding"])
            except (KeyError, IndexError, TypeError):
                raise Unreachable(
                    f"--llm {self.options.mode}: cannot learn the embedding width from "
                    f"{self.options.embed_model}: {error or 'no embedding in the reply'}; "
                    "give dim=N"
                ) from None
            self._dim = width
        return self._dim

    # -- the protocol --------------------------------------------------------------------
    def extract(self, episode: Episode) -> tuple[Claim, ...] | None:
        """The model's claims for the episode's text and speaker (never its stated claims);
        a text-only claim when it finds none (as the mock); None on a failed reply."""
        speaker = episode.speaker.strip().lower()
        subject = "owner" if speaker in ("", "user") else speaker
        payload: dict[str, Any] = {"speaker": episode.speaker, "text": episode.text}
        n = self.options.known_keys
        if n and self.keys_seen:
            payload["known_keys"] = sorted(list(self.keys_seen)[-n:])
        fields, why = self._answer("extract", "extract", payload, valid_extraction)
        if fields is None:
            self._fault("extract_fail", "extract", f"episode {episode.id!r}", why)
            return None
        if not fields:
            return (Claim(key="", value=episode.text, category="fact", subject=subject),)
        for f in fields:
            self.keys_seen.pop(f["key"], None)  # (the most recently used last)
            self.keys_seen[f["key"]] = None
        return tuple(Claim(**f) for f in fields)

    def embed(self, items: Sequence[Claim | str], keys: Sequence[str]) -> Embedded:
        """One embeddings request per distinct text (so recorded replies serve every policy
        and batching), ``concurrency`` at a time; replies are taken in item order."""
        n = len(items)
        if len(keys) != n:
            raise ValueError(f"ModelLLM.embed: {n} items but {len(keys)} keys")
        dim = self.dim
        texts = [embed_text(it) for it in items]
        distinct = list(dict.fromkeys(texts))
        workers = min(self.options.concurrency, len(distinct))
        if workers > 1:
            with cf.ThreadPoolExecutor(max_workers=workers) as pool:
                answers = list(pool.map(self._embed_one, distinct))
        else:
            answers = [self._embed_one(t) for t in distinct]
        by_text = dict(zip(distinct, answers))
        for reply, _, _ in answers:
            self.meters["embed"].add(reply)
        out = np.zeros((n, dim), dtype=np.float32)
        ok = np.zeros(n, dtype=bool)
        for i, (text, key) in enumerate(zip(texts, keys)):
            _, row, why = by_text[text]
            if row is None:
                self._fault("embed_fail", "embed", f"item {key!r}", why)
            else:
                out[i] = row
                ok[i] = True
        return Embedded(vectors=out, ok=ok)

    def embed_query(self, query: Query) -> np.ndarray | None:
        """The query's text embedded (a model cannot know the fact keys it asks about)."""
        self.dim  # noqa: B018 - the width is learnt before the first vector is checked
        reply, row, why = self._embed_one(query.text)
        self.meters["embed_query"].add(reply)
        if row is None:
            self._fault("embed_fail", "embed_query", f"query {query.id!r}", why)
        return row

    def classify(
        self, new: Claim, candidates: Sequence[Claim], *, answer: str, key: str
    ) -> str | list[str]:
        """One request per call; an invalid reply is passed on as the policy's invalid
        answer (the raw text, or "" per candidate) and counted."""
        if answer not in ("index", "relation"):
            raise ValueError(
                f"ModelLLM.classify: answer must be 'index' or 'relation', got {answer!r}"
            )
        n = len(candidates)
        if n == 0:
            return NONE if answer == "index" else []
        payload = {"new": claim_view(new), "candidates": [claim_view(c) for c in candidates]}
        if answer == "index":
            got, why = self._answer(
                "classify_index", "classify", payload, lambda d: valid_index(d, n)
            )
            if got is None:
                self._fault("invalid_answer", "classify", f"call {key!r}", why)
                return ""
            return str(got)
        rel, why = self._answer(
            "classify_relation", "classify", payload, lambda d: valid_relations(d, n)
        )
        if rel is None:
            self._fault("invalid_answer", "classify", f"call {key!r}", why)
            return [""] * n
        for i, r in enumerate(rel):
            if r not in RELATIONS:
                self._fault(
                    "invalid_answer", "classify", f"call {key!r}#{i}", f"relation {r!r:.40}"
                )
        return list(rel)

    def summarize(self, texts: Sequence[str], *, key: str) -> str:
        got, why = self._answer("summarize", "summarize", {"texts": list(texts)}, valid_summary)
        if got is None:
            self._fault("invalid_answer", "summarize", f"call {key!r}", f"{why}; answered NONE")
            return NONE
        return str(got)

    def synthesize(self, claims: Sequence[Claim], *, key: str) -> Claim:
        """The model's key, value, category and subject; importance the highest set among
        the claims and confidence their mean (bookkeeping, not judgement, as the mock)."""
        claims = list(claims)
        if not claims:
            raise ValueError(f"ModelLLM.synthesize({key!r}): no claims to synthesize")
        set_importance = [c.importance for c in claims if c.importance is not None]
        importance = max(set_importance) if set_importance else None
        confidence = min(1.0, max(0.0, math.fsum(c.confidence for c in claims) / len(claims)))
        payload = {"claims": [claim_view(c) for c in claims]}
        got, why = self._answer("synthesize", "synthesize", payload, valid_synthesis)
        if got is None:
            self._fault(
                "invalid_answer", "synthesize", f"call {key!r}", f"{why}; kept the last claim"
            )
            return dataclasses.replace(
                claims[-1], importance=importance, confidence=confidence, noise=False
            )
        return Claim(**got, importance=importance, confidence=confidence)
