"""What the mock LLM's answers would cost from a real model: calls by kind, prompt and reply
tokens, embedding calls, items and tokens.

``MeteredMockLLM`` answers exactly as :class:`memsim.engine.mockllm.MockLLM` (it is one) and,
for every protocol call, counts the request the real-model adapter
(memsim.engine.openai_llm.ModelLLM) would send for it: the same prompt file's system text,
instructions and ``INPUT`` (the payload as canonical JSON, the extract prompt's
``known_keys`` among it), and the reply a model would give for the mock's answer in the
prompt's JSON schema. Calls the adapter never sends are not counted (a classification with no
candidates). A failed extraction counts its prompt and no reply.

Tokens are counted with the tokenizer the WordLlama wheel ships (``l2_supercat``: the
32,000-token Llama 2 BPE), read from site-packages with no download (:func:`tokenizer`). A
reply is counted whole; a prompt as the sum of its parts, each tokenized on its own: the
prompt text (with the space the tokenizer puts before a text), the JSON around the items,
and each item (a claim, a text) with its separator. A token the whole prompt would merge
across a boundary of parts counts twice; tests/engine/test_metering.py bounds the
difference.

Counting is cheap: a call only tallies its parts (claims by identity, texts by value); each
distinct part is rendered once when :meth:`MeteredMockLLM.usage` is read, and counted once
per process, cut into pieces no token spans (:func:`pieces`) and each distinct piece
encoded once, in batch. None of it changes an answer.
"""

from __future__ import annotations

import functools
import operator
import re
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .embed import import_wordllama
from .events import Claim, Episode, Query
from .llm import Embedded
from .llm_cache import canonical_json
from .mockllm import MockLLM
from .openai_llm import ModelOptions, claim_view, embed_text, prompt

# The protocol methods a meter counts, in the order usage() lists them (the adapter's).
CHAT_METHODS = ("extract", "classify", "summarize", "synthesize")
EMBED_METHODS = ("embed", "embed_query")

# The extract prompt lists the latest this many fact keys extraction has returned (the
# adapter's default ``known_keys``), so a real model reuses them.
KNOWN_KEYS = ModelOptions(mode="replay").known_keys

# A tally keeps at most this many objects alive by identity before it renders them into
# texts (bounds the memory of a long run; rendering early changes no count).
FLUSH_AT = 200_000

TOKENIZER_FILE = "l2_supercat_tokenizer_config.json"
TOKENIZER = "wordllama l2_supercat (Llama 2 BPE, 32,000 tokens)"


@functools.cache
def tokenizer() -> Any:
    """The tokenizer shipped in the ``wordllama`` wheel (a ``tokenizers.Tokenizer``, read
    from its file: nothing downloads), without special tokens, padding or truncation, and
    without the space its normalizer puts before every text: the meter counts parts of
    texts, and only a text's first part starts with it (:func:`count_tokens`)."""
    from tokenizers import Tokenizer, normalizers

    wordllama = import_wordllama()

    path = Path(wordllama.__file__).parent / "tokenizers" / TOKENIZER_FILE
    tok = Tokenizer.from_file(str(path))
    tok.no_padding()
    tok.no_truncation()
    tok.normalizer = normalizers.Replace(" ", SPACE)  # (the file's, but its Prepend)
    return tok


SPACE = "\u2581"  # the Llama tokenizer's space


def count_tokens(texts: Sequence[str]) -> list[int]:
    """Tokens of each text as a text of its own (the Llama tokenizer's leading space
    included, as it counts it), no special tokens."""
    return part_tokens([" " + t if t else t for t in texts])


def part_tokens(texts: Sequence[str]) -> list[int]:
    """Tokens of each text as a part of a longer one (no leading space added): the texts
    this process has not counted yet are cut into :func:`pieces`, and the pieces not
    counted yet are encoded in one batch (runs of one stream share most of their texts, and
    texts most of their pieces)."""
    cache = _TOKENS
    new = list(dict.fromkeys(t for t in texts if t not in cache))
    if new:
        if len(cache) + len(new) > TOKEN_CACHE:
            cache.clear()
            _PIECES.clear()
        cut = [pieces(t) for t in new]
        known = _PIECES
        fresh = list(dict.fromkeys(p for ps in cut for p in ps if p not in known))
        if fresh:
            encoded = tokenizer().encode_batch_fast(fresh, add_special_tokens=False)
            known.update(zip(fresh, (len(e.ids) for e in encoded)))
        cache.update(zip(new, (sum(known[p] for p in ps) for ps in cut)))
    return [cache[t] for t in texts]


# where a text is cut into pieces: before a space (a Llama token never spans one: the
# tokenizer turns it into the mark that begins a word) and after a comma and a quote (in
# JSON, where a string ends and the next begins: no token spans that boundary either, and
# JSON has no spaces); tests/engine/test_metering.py checks the pieces' counts against the
# whole texts'
_CUT = re.compile(r'(?<=,")|(?= )')


def pieces(text: str) -> list[str]:
    """``text`` cut where no token of the tokenizer spans the cut (see ``_CUT``)."""
    return [p for p in _CUT.split(text) if p]


# token counts of the texts counted so far in this process, and rendered parts, up to this
# many (then the cache starts again: counts never depend on it)
TOKEN_CACHE = 500_000
RENDER_CACHE = 200_000
_TOKENS: dict[str, int] = {}
_PIECES: dict[str, int] = {}


class _Tally:
    """Parts of prompts or replies counted by occurrence: texts as given, other values by
    value and objects by identity (each kept alive while counted, so its id stays its own),
    both rendered to text (by ``render`` unless the call names another) only when read."""

    __slots__ = ("render", "objects", "by_id", "values", "texts")

    def __init__(self, render: Callable[[Any], str]) -> None:
        self.render = render
        self.objects: dict[int, Any] = {}
        self.by_id: dict[Callable[[Any], str], Counter[int]] = {}
        self.values: dict[Callable[[Any], str], Counter[Any]] = {}
        self.texts: Counter[str] = Counter()

    def add_texts(self, texts: Iterable[str]) -> None:
        self.texts.update(texts)

    def add_values(self, values: Iterable[Any], render: Callable[[Any], str] | None = None) -> None:
        r = render or self.render
        counts = self.values.get(r)
        if counts is None:
            counts = self.values[r] = Counter()
        counts.update(values)

    def add(self, objs: Sequence[Any], render: Callable[[Any], str] | None = None) -> None:
        r = render or self.render
        counts = self.by_id.get(r)
        if counts is None:
            counts = self.by_id[r] = Counter()
        ids = list(map(id, objs))
        counts.update(ids)
        self.objects.update(zip(ids, objs))
        if len(self.objects) > FLUSH_AT:
            self.flush()

    def flush(self) -> None:
        texts, objects = self.texts, self.objects
        for render, by_id in self.by_id.items():
            for i, n in by_id.items():
                texts[_rendered(render, objects[i])] += n
        for render, values in self.values.items():
            for v, n in values.items():
                texts[_rendered(render, v)] += n
        objects.clear()
        self.by_id.clear()
        self.values.clear()

    def rendered(self) -> Counter[str]:
        self.flush()
        return self.texts


def _rendered(render: Callable[[Any], str], obj: Any) -> str:
    """``render(obj)``, kept for the process by the object's identity (runs of one stream
    share its episodes and claims; the object is kept too, so its id stays its own)."""
    key = (render, id(obj))
    hit = _RENDERED.get(key)
    if hit is not None and hit[0] is obj:
        return hit[1]
    text = render(obj)
    if len(_RENDERED) >= RENDER_CACHE:
        _RENDERED.clear()
    _RENDERED[key] = (obj, text)
    return text


_RENDERED: dict[tuple[Callable[[Any], str], int], tuple[Any, str]] = {}


def _json_item(obj: Any) -> str:
    """One element of a JSON array with its separator."""
    return canonical_json(obj) + ","


def _claim_item(c: Claim) -> str:
    return _json_item(claim_view(c))


def _extract_reply(claims: Sequence[Claim]) -> str:
    """The extract prompt's reply listing ``claims`` (a text-only claim: none), as
    ``canonical_json({"claims": [...]})`` writes it."""
    items = ",".join(_rendered(_extracted_json, c) for c in claims if c.key)
    return ' {"claims":[' + items + "]}"


def _index_reply(answer: str) -> str:
    return " " + canonical_json({"answer": answer})


def _relation_reply(relations: tuple[str, ...]) -> str:
    return " " + canonical_json({"relations": list(relations)})


def _summary_reply(summary: str) -> str:
    return " " + canonical_json({"summary": summary})


def _extracted_json(c: Claim) -> str:
    """A claim as the extract prompt's schema has a model reply it."""
    return canonical_json(_extracted(c))


def _extracted(c: Claim) -> dict[str, Any]:
    return {
        "key": c.key,
        "value": c.value,
        "category": c.category,
        "subject": c.subject,
        "importance": c.importance,
        "confidence": c.confidence,
        "noise": c.noise,
        "attributes": {k: list(v) if isinstance(v, tuple) else v for k, v in c.attrs},
    }


def _synthesized_reply(c: Claim) -> str:
    return " " + canonical_json(
        {"claim": {"key": c.key, "value": c.value, "category": c.category, "subject": c.subject}}
    )


def _extract_payload(e: Episode) -> str:
    """The extract prompt's INPUT but its ``known_keys`` (counted apart)."""
    return canonical_json({"speaker": e.speaker, "text": e.text})


def _leading(render: Callable[[Any], str]) -> Callable[[Any], str]:
    """``render`` of a text sent on its own (an embedding input): with the leading space
    the tokenizer counts before a text."""
    return lambda obj: " " + render(obj)


class _Method:
    """One protocol method's meter: calls, and the parts of its prompts and replies."""

    __slots__ = ("calls", "items", "prompt", "reply")

    def __init__(self, render_in: Callable[[Any], str], render_out: Callable[[Any], str]):
        self.calls = 0
        self.items = 0  # embedding methods: the texts embedded
        self.prompt = _Tally(render_in)
        self.reply = _Tally(render_out)


class MeteredMockLLM(MockLLM):
    """The mock LLM, metered as a real model would be billed (module docstring). Takes
    MockLLM's arguments; its answers are MockLLM's, bit for bit."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._meters = {
            "extract": _Method(_extract_payload, _extract_reply),
            "embed": _Method(_leading(embed_text), str),
            "embed_query": _Method(_leading(str), str),
            "classify": _Method(_claim_item, _index_reply),
            "summarize": _Method(_json_item, _summary_reply),
            "synthesize": _Method(_claim_item, _synthesized_reply),
        }
        # the extract prompt's known keys: the latest KNOWN_KEYS distinct keys extraction
        # returned (the latest last), the extract call from which each has been listed,
        # and the calls that listed each key before it left the list
        self._known_keys: OrderedDict[str, None] = OrderedDict()
        self._listed_from: dict[str, int] = {}
        self._listed: Counter[str] = Counter()

    # -- the protocol, metered ------------------------------------------------------------
    def extract(self, episode: Episode) -> tuple[Claim, ...] | None:
        claims = super().extract(episode)
        m = self._meters["extract"]
        m.calls += 1
        m.prompt.add_texts((_head_part("extract"),))
        m.prompt.add((episode,))
        if self._known_keys:
            m.prompt.add_texts(('"known_keys":[],',))
        if claims is not None:
            m.reply.add((claims,))
            if KNOWN_KEYS:
                self._list_keys([c.key for c in claims if c.key], m.calls)
        return claims

    def _list_keys(self, keys: list[str], calls: int) -> None:
        """The adapter's list of known keys after an extraction that returned ``keys``: each
        moves to the end; a key that enters it is listed from the next call (``calls``
        counts this one), and one that leaves was listed up to this one."""
        listed, since = self._known_keys, self._listed_from
        for k in keys:
            if k in listed:
                listed.move_to_end(k)
                continue
            listed[k] = None
            since[k] = calls
            if len(listed) > KNOWN_KEYS:
                gone, _ = listed.popitem(last=False)
                self._listed[gone] += calls - since.pop(gone)

    def _known_key_parts(self) -> Counter[str]:
        """Each known key's part of the extract prompts (its JSON string and separator),
        counted once per call that listed it."""
        calls = self._meters["extract"].calls
        listed = Counter(self._listed)
        for k, since in self._listed_from.items():
            listed[k] += calls - since
        return Counter({_rendered(_json_item, k): n for k, n in listed.items() if n})

    def embed(self, items: Sequence[Claim | str], keys: Sequence[str]) -> Embedded:
        out = super().embed(items, keys)
        m = self._meters["embed"]
        m.calls += 1
        m.items += len(items)
        m.prompt.add(items)
        return out

    def embed_query(self, query: Query) -> np.ndarray | None:
        row = super().embed_query(query)
        m = self._meters["embed_query"]
        m.calls += 1
        m.items += 1
        m.prompt.add_values((query.text,))
        return row

    def classify(
        self, new: Claim, candidates: Sequence[Claim], *, answer: str, key: str
    ) -> str | list[str]:
        reply = super().classify(new, candidates, answer=answer, key=key)
        if len(candidates):  # (the adapter asks a model nothing about no candidates)
            m = self._meters["classify"]
            m.calls += 1
            name = "classify_index" if answer == "index" else "classify_relation"
            m.prompt.add_texts((_head_part(name), '{"candidates":[],"new":}'))
            m.prompt.add(candidates)
            m.prompt.add((new,))
            if isinstance(reply, str):
                m.reply.add_values((reply,), _index_reply)
            else:
                m.reply.add_values((tuple(reply),), _relation_reply)
        return reply

    def summarize(self, texts: Sequence[str], *, key: str) -> str:
        summary = super().summarize(texts, key=key)
        m = self._meters["summarize"]
        m.calls += 1
        m.prompt.add_texts((_head_part("summarize"), '{"texts":[]}'))
        m.prompt.add_values(texts)
        m.reply.add_values((summary,))
        return summary

    def synthesize(self, claims: Sequence[Claim], *, key: str) -> Claim:
        out = super().synthesize(claims, key=key)
        m = self._meters["synthesize"]
        m.calls += 1
        m.prompt.add_texts((_head_part("synthesize"), '{"claims":[]}'))
        m.prompt.add(claims)
        m.reply.add((out,))
        return out

    # -- the bill -------------------------------------------------------------------------
    def _tokens(self, texts: Counter[str]) -> int:
        return sum(map(operator.mul, part_tokens(list(texts)), texts.values()))

    def usage(self) -> dict[str, Any]:
        """The :class:`memsim.engine.llm.Metered` usage but latency and faults (the mock has
        no server and no clock): ``{"methods": {method: {calls, tokens_in, tokens_out}},
        "total": {calls, tokens_in, tokens_out}, "embedding": {calls, items, tokens},
        "tokenizer": name}``. Calls count chat requests and embedding calls alike (the
        adapter sends an embedding request per distinct text of a call; here a call is one)."""
        per: dict[str, dict[str, int]] = {}
        for name, m in self._meters.items():
            if not m.calls:
                continue
            prompts = m.prompt.rendered()
            if name == "extract":
                prompts = prompts + self._known_key_parts()
            per[name] = {
                "calls": m.calls,
                "tokens_in": self._tokens(prompts),
                "tokens_out": self._tokens(m.reply.rendered()),
            }
            if name in EMBED_METHODS:
                per[name]["items"] = m.items
        total = {f: sum(v[f] for v in per.values()) for f in ("calls", "tokens_in", "tokens_out")}
        embedding = {
            "calls": sum(per[n]["calls"] for n in EMBED_METHODS if n in per),
            "items": sum(per[n]["items"] for n in EMBED_METHODS if n in per),
            "tokens": sum(per[n]["tokens_in"] for n in EMBED_METHODS if n in per),
        }
        return {"methods": per, "total": total, "embedding": embedding, "tokenizer": TOKENIZER}


@functools.cache
def prompt_head(name: str) -> str:
    """The fixed text of prompt ``name``'s request as the adapter sends it: the system
    message, the instructions and the ``INPUT`` line (the payload follows)."""
    p = prompt(name)
    return f"{p.system}\n{p.instructions}\n\nINPUT:\n"


@functools.cache
def _head_part(name: str) -> str:
    """:func:`prompt_head` as the first part of a request (with the leading space)."""
    return " " + prompt_head(name)


def chat_request_text(name: str, payload: Any) -> str:
    """The whole text the adapter sends for prompt ``name`` and ``payload``: the parts the
    meter counts one by one, in one piece (tests compare the two counts)."""
    return prompt_head(name) + canonical_json(payload)
