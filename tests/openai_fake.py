"""A fake OpenAI-compatible server on 127.0.0.1 for the model adapter's tests (no network).

It answers ``POST /v1/chat/completions`` and ``POST /v1/embeddings`` deterministically from
the request text alone, well enough for every policy to run:

- extraction reads "My owner city is Boston." as the claim owner.city = Boston, and
  "chat about X" as a chatter claim (noise); anything else states no fact;
- classification compares the claims' keys and values (and their ``context`` attributes) as
  the mock's truth does; summaries keep the first clause of the first three texts (NONE for
  small talk); synthesis keeps the majority value of one key, or a ``meta`` claim;
- embeddings are hashed bags of words (``DIM`` wide), so equal texts give equal vectors and
  texts sharing words are near.

``server.plan`` scripts misbehaviour: each entry applies to the next request (of its
``task`` when it names one) and is then used up: ``{"status": 429, "headers": {...}}``, ``{"status":
500}``, ``{"content": "not json"}`` (the model's message), ``{"body": "<html>"}`` (the HTTP
body), ``{"doc": {...}}`` (the model's JSON), ``{"delay": seconds}`` before the answer.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

DIM = 64
_WORD = re.compile(r"[0-9a-z]+")
_FACT = re.compile(r"^my (.+?) is (.+?)\.?$", re.IGNORECASE)
_CHAT = re.compile(r"^chat about (.+)$", re.IGNORECASE)
MIN_SUMMARY_WORDS = 8


def fake_embedding(text: str) -> list[float]:
    v = np.zeros(DIM)
    v[0] = 0.25  # (no text embeds to zero)
    for w in _WORD.findall(text.lower()):
        h = hashlib.blake2b(w.encode(), digest_size=8).digest()
        v[h[0] % DIM] += 1.0 if h[1] % 2 else -1.0
    return [float(x) for x in v]


def extract(payload: dict[str, Any]) -> dict[str, Any]:
    text = payload["text"].strip()
    m = _FACT.match(text)
    if m:
        key = ".".join(_WORD.findall(m.group(1).lower()))
        claim = {"key": key, "value": m.group(2), "category": "fact", "noise": False}
        claim.update(importance=0.6, confidence=0.9, subject="owner")
    else:
        m = _CHAT.match(text)
        if not m:
            return {"claims": []}
        claim = {"key": "chat.topic", "value": m.group(1), "category": "sentiment", "noise": True}
        claim.update(importance=0.1, confidence=0.9, subject="owner")
    return {"claims": [{**claim, "attributes": {}}]}


def relation(new: dict[str, Any], old: dict[str, Any]) -> str:
    if new["key"] != old["key"]:
        return "IRRELEVANT"
    if new["value"].casefold().strip() == old["value"].casefold().strip():
        return "SUPPORTS"
    ctx_new = (new.get("attributes") or {}).get("context")
    ctx_old = (old.get("attributes") or {}).get("context")
    if ctx_new is not None and ctx_old is not None and ctx_new != ctx_old:
        return "PARTIAL"
    return "CONTRADICTS" if new["key"] else "IRRELEVANT"


def summarize(payload: dict[str, Any]) -> dict[str, Any]:
    texts = payload["texts"]
    if sum(len(_WORD.findall(t.lower())) for t in texts) < MIN_SUMMARY_WORDS:
        return {"summary": "NONE"}
    clauses = [re.split(r"[.;!?\n]", t)[0].strip() for t in texts if t.strip()][:3]
    return {"summary": " ".join(c[:1].upper() + c[1:] + "." for c in clauses if c)}


def synthesize(payload: dict[str, Any]) -> dict[str, Any]:
    claims = payload["claims"]
    keys = {c["key"] for c in claims}
    if len(keys) == 1:
        values = [c["value"] for c in claims]
        counts = Counter(values)
        last = {v: i for i, v in enumerate(values)}
        value = max(counts, key=lambda v: (counts[v], last[v]))
        stating = [c for c in claims if c["value"] == value][-1]
        return {"claim": {k: stating[k] for k in ("key", "value", "category", "subject")}}
    topics = [c["key"].rsplit(".", 1)[0] for c in claims]
    topic = topics[0] if len(set(topics)) == 1 and topics[0] else "misc"
    value = "; ".join(sorted({c["value"] for c in claims}))
    return {"claim": {"key": topic, "value": value, "category": "meta", "subject": "owner"}}


def answer(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The model's JSON for a chat request (the task read from the INPUT's fields)."""
    user = messages[-1]["content"]
    instructions, _, data = user.partition("\n\nINPUT:\n")
    payload = json.loads(data)
    if "speaker" in payload:
        return extract(payload)
    if "texts" in payload:
        return summarize(payload)
    if "claims" in payload:
        return synthesize(payload)
    rel = [relation(payload["new"], c) for c in payload["candidates"]]
    if "SUPPORTS" in instructions:
        return {"relations": rel}
    hit = next((str(i + 1) for i, r in enumerate(rel) if r == "CONTRADICTS"), "NONE")
    return {"answer": hit}


def task_of(path: str, request: dict[str, Any]) -> str:
    if path.endswith("/embeddings"):
        return "embeddings"
    user = request["messages"][-1]["content"]
    payload = json.loads(user.partition("\n\nINPUT:\n")[2])
    for field, task in (("speaker", "extract"), ("texts", "summarize"), ("claims", "synthesize")):
        if field in payload:
            return task
    return "classify"


class FakeOpenAI(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.plan: list[dict[str, Any]] = []
        self.requests: Counter[str] = Counter()
        self.authorization: set[str] = set()
        self.bodies: list[dict[str, Any]] = []  # every request body, in arrival order
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def take(self, task: str) -> dict[str, Any]:
        with self.lock:
            self.requests[task] += 1
            for i, step in enumerate(self.plan):
                if step.get("task") in (None, task):
                    return self.plan.pop(i)
        return {}

    def __enter__(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.shutdown()
        self.server_close()
        self.thread.join(timeout=5)


class _Handler(BaseHTTPRequestHandler):
    server: FakeOpenAI

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - (quiet)
        pass

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.authorization.add(self.headers.get("Authorization", ""))
        self.server.bodies.append(request)
        task = task_of(self.path, request)
        step = self.server.take(task)
        if "delay" in step:
            time.sleep(step["delay"])
        if "status" in step:
            return self._send(step["status"], {"error": "scripted"}, step.get("headers", {}))
        if "body" in step:
            return self._send_text(200, step["body"])
        if task == "embeddings":
            text = request["input"]
            reply = {
                "data": [{"embedding": fake_embedding(text), "index": 0}],
                "usage": {"prompt_tokens": len(_WORD.findall(text.lower())) + 1},
            }
            return self._send(200, reply)
        content = step.get("content")
        if content is None:
            content = json.dumps(step.get("doc") or answer(request["messages"]))
        reply = {
            "choices": [{"message": {"role": "assistant", "content": content}}],
            "usage": {
                "prompt_tokens": len(json.dumps(request["messages"])) // 4,
                "completion_tokens": len(content) // 4 + 1,
            },
        }
        self._send(200, reply)

    def _send(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        self._send_text(status, json.dumps(obj), headers)

    def _send_text(self, status: int, text: str, headers: dict[str, str] | None = None) -> None:
        data = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        try:
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # (the client gave up waiting: a timeout test)
