"""Loader for the official LoCoMo JSON (Maharana et al., ACL 2024; file data/locomo10.json).

Mapping (docs/scenarios.md has the full story):

- one Episode per dialogue turn: ``speaker`` = the turn's speaker, ``text`` =
  ``"<speaker>: <text>"`` plus ``" [image: <blip_caption>]"`` for image turns, no claims
  (LoCoMo has no structured facts: policies embed the text with the LLM's text embedder),
  ``conversation`` = ``"<sample>/session_<n>"``, id ``"<sample>/<dia_id>"``;
- time: a session's date (``"1:56 pm on 8 May, 2023"``) in days since the sample's first
  session; turns have no time of their own, so turn i of a session comes ``TURN_GAP_DAYS``
  (one minute) after turn i-1 to keep their order. A session dated before the end of the
  previous one is moved to just after it (counted in the report);
- one Query per question of categories 1-4 (``group`` = multi-hop, temporal, open-domain,
  single-hop, per the dataset's evaluation code) whose ``answers`` are its evidence turns;
  category 5 (adversarial) questions are unanswerable by design: kept apart in
  ``Loaded.unanswerable`` and the report, never in the stream;
- query time: ``after`` (default) = one minute after the sample's last turn; or
  ``evidence+DAYS`` = DAYS after the latest evidence turn (the delay between learning and
  being asked);
- several samples: ``sample=ID`` selects one (the standard protocol, and what the
  ``standard`` suite uses); without it all samples are concatenated on one clock, each
  starting ``SAMPLE_GAP_DAYS`` after the previous sample's last event, so earlier
  conversations act as distractors for later ones.

Quirks of the file are repaired when unambiguous and counted, never silently dropped:
evidence strings holding several ids (``"D8:6; D9:17"``), a stray colon (``"D:11:26"``),
zero-padded positions (``"D30:05"``); evidence naming no turn is dropped; a question left
with no evidence is dropped. ``LoadReport`` counts every kept and dropped item with its
reason; it is also in ``Stream.meta["locomo_report"]``.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memsim.engine import limits
from memsim.engine.embed import TEXT_STREAM_EMBEDDER
from memsim.engine.errors import ParamError, ScenarioError
from memsim.engine.events import Episode, Query, Stream
from memsim.engine.sources import ScenarioSource

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
DATE_FORMAT = "%I:%M %p on %d %B, %Y"
TURN_GAP_DAYS = 1.0 / 1440.0  # one minute between consecutive turns of a session
SAMPLE_GAP_DAYS = 1.0  # between concatenated samples
_SESSION = re.compile(r"^session_(\d+)$")
_EVIDENCE = re.compile(r"^D:?(\d+):(\d+)$")
_OPTIONS = {
    "sample": "a sample id, e.g. conv-26 (default: all samples, concatenated)",
    "query_time": "after (default) or evidence+DAYS",
    "k": "results asked of each query (default 10)",
}


@dataclass
class LoadReport:
    """What the loader kept and dropped, with reasons (all counts)."""

    file: str = ""
    samples: int = 0
    sessions: int = 0
    turns: int = 0
    image_turns: int = 0
    questions: int = 0
    queries: int = 0  # questions kept as queries
    unanswerable: int = 0  # category 5, kept apart
    questions_dropped: Counter = field(default_factory=Counter)  # reason -> count
    evidence_kept: int = 0
    evidence_normalized: Counter = field(default_factory=Counter)  # kind of repair -> count
    evidence_dropped: Counter = field(default_factory=Counter)  # reason -> count
    sessions_moved: int = 0  # dated before the previous session ended
    unused_date_keys: int = 0  # session_<n>_date_time without a session
    examples: list[str] = field(default_factory=list)  # the first few repairs and drops

    def note(self, message: str) -> None:
        if len(self.examples) < 20:
            self.examples.append(message)

    def to_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        for k in ("questions_dropped", "evidence_normalized", "evidence_dropped"):
            d[k] = dict(sorted(d[k].items()))
        d["examples"] = list(self.examples)
        return d

    def summary(self) -> str:
        return (
            f"{self.samples} samples, {self.turns} turns, {self.questions} questions: "
            f"{self.queries} queries, {self.unanswerable} unanswerable (category 5), "
            f"{sum(self.questions_dropped.values())} dropped {dict(self.questions_dropped)}; "
            f"evidence: {self.evidence_kept} kept, {sum(self.evidence_normalized.values())} "
            f"repaired, {sum(self.evidence_dropped.values())} dropped {dict(self.evidence_dropped)}"
        )


@dataclass(frozen=True)
class Unanswerable:
    """A category-5 question: the conversation does not answer it."""

    sample: str
    question: str
    adversarial_answer: str
    evidence: tuple[str, ...]


@dataclass(frozen=True)
class Loaded:
    stream: Stream
    report: LoadReport
    unanswerable: tuple[Unanswerable, ...]


def _fail(file: str, path: str, msg: str, value: Any) -> ScenarioError:
    return ScenarioError(f"{file}: {path}: {msg}, got {limits.shown(value)}")


def _read(path: str | Path) -> tuple[str, list]:
    file = str(Path(path))
    text = limits.read_text(
        path,
        "LoCoMo file",
        ScenarioError,
        missing=" (pass the path to your copy of the official locomo10.json)",
    )
    data = limits.read_json(text, file, ScenarioError)
    if not isinstance(data, list) or not data:
        raise _fail(file, "top level", "must be a non-empty list of samples", type(data).__name__)
    return file, data


def sample_ids(path: str | Path) -> list[str]:
    """The sample ids of a LoCoMo file, in file order."""
    file, data = _read(path)
    return [_sample_id(file, i, s) for i, s in enumerate(data)]


def _sample_id(file: str, i: int, s: Any) -> str:
    if not isinstance(s, dict):
        raise _fail(file, f"[{i}]", "a sample must be an object", s)
    sid = s.get("sample_id")
    if not isinstance(sid, str) or not sid:
        raise _fail(file, f"[{i}].sample_id", "must be a non-empty string", sid)
    return sid


def parse_query_time(value: Any) -> float | None:
    """``after`` -> None; ``evidence+DAYS`` -> DAYS (>= 0); anything else is an error."""
    if value in (None, "after"):
        return None
    m = re.fullmatch(r"evidence\+(\d+(?:\.\d*)?|\.\d+)", str(value).strip())
    if not m:
        raise ScenarioError(
            "locomo: query_time must be 'after' or 'evidence+DAYS' (DAYS >= 0), "
            f"got {limits.shown(value)}"
        )
    try:
        return limits.parse_float(m.group(1), "locomo: query_time DAYS", 0.0)
    except ParamError as e:  # 400 digits: beyond float range
        raise ScenarioError(str(e)) from None


def normalize_evidence(raw: Any) -> tuple[list[str], list[tuple[str, str]]]:
    """Split and repair one evidence entry: (dia_ids, [(problem, fragment)]).

    A problem is ``"split"`` (several ids in one string), ``"stray colon"``, ``"zero padded"``
    (all repaired: the id is kept) or ``"malformed"`` (dropped)."""
    if not isinstance(raw, str):
        return [], [("malformed", repr(raw))]
    parts = [x for x in re.split(r"[;,\s]+", raw.strip()) if x]
    notes: list[tuple[str, str]] = [("split", raw)] if len(parts) > 1 else []
    ids = []
    for part in parts:
        m = _EVIDENCE.match(part)
        if not m:
            notes.append(("malformed", part))
            continue
        canonical = f"D{int(m.group(1))}:{int(m.group(2))}"
        if part.startswith("D:"):
            notes.append(("stray colon", part))
        elif canonical != part:
            notes.append(("zero padded", part))
        ids.append(canonical)
    if not parts:
        notes.append(("malformed", raw))
    return ids, notes


def _session_time(file: str, path: str, value: Any) -> _dt.datetime:
    if not isinstance(value, str):
        raise _fail(
            file, path, f"must be a date like '1:56 pm on 8 May, 2023' ({DATE_FORMAT})", value
        )
    try:
        return _dt.datetime.strptime(" ".join(value.split()), DATE_FORMAT)
    except ValueError:
        raise _fail(
            file, path, f"is not a date like '1:56 pm on 8 May, 2023' ({DATE_FORMAT})", value
        ) from None


def _sample_events(
    file: str, i: int, s: dict, offset: float, delay: float | None, k: int, report: LoadReport
) -> tuple[list, list[Unanswerable], float]:
    """Episodes and queries of one sample starting at day ``offset``; returns its end time."""
    sid = _sample_id(file, i, s)
    conv = s.get("conversation")
    if not isinstance(conv, dict):
        raise _fail(file, f"[{i}].conversation", "must be an object", conv)
    sessions = sorted((int(m.group(1)), key) for key in conv if (m := _SESSION.match(key)))
    if not sessions:
        raise _fail(file, f"[{i}].conversation", "has no session_<n> lists", sorted(conv)[:8])
    report.samples += 1
    report.unused_date_keys += sum(
        1 for key in conv if key.endswith("_date_time") and key[: -len("_date_time")] not in conv
    )
    first: _dt.datetime | None = None
    last_end = -1.0
    turn_time: dict[str, float] = {}
    events: list = []
    for n, key in sessions:
        turns = conv[key]
        if not isinstance(turns, list):
            raise _fail(file, f"[{i}].conversation.{key}", "must be a list of turns", turns)
        if not turns:
            continue
        dkey = f"{key}_date_time"
        if dkey not in conv:
            raise _fail(file, f"[{i}].conversation", f"session {n} has no {dkey}", None)
        when = _session_time(file, f"[{i}].conversation.{dkey}", conv[dkey])
        first = first or when
        start = (when - first).total_seconds() / 86400.0
        if start <= last_end:
            report.sessions_moved += 1
            report.note(
                f"{sid} {key} dated {conv[dkey]!r} before the previous session ended: moved after "
                "it"
            )
            start = last_end + TURN_GAP_DAYS
        report.sessions += 1
        for j, turn in enumerate(turns):
            path = f"[{i}].conversation.{key}[{j}]"
            if not isinstance(turn, dict):
                raise _fail(file, path, "a turn must be an object", turn)
            for fname in ("speaker", "dia_id", "text"):
                if not isinstance(turn.get(fname), str):
                    raise _fail(file, f"{path}.{fname}", "must be a string", turn.get(fname))
            ids, notes = normalize_evidence(turn["dia_id"])
            if len(ids) != 1 or any(p in ("malformed", "split") for p, _ in notes):
                raise _fail(
                    file, f"{path}.dia_id", "must look like D<session>:<position>", turn["dia_id"]
                )
            dia = ids[0]
            if dia in turn_time:
                raise _fail(file, f"{path}.dia_id", "is used twice in this sample", turn["dia_id"])
            t = round(offset + start + j * TURN_GAP_DAYS, 9)
            turn_time[dia] = t
            text = f"{turn['speaker']}: {turn['text']}"
            caption = turn.get("blip_caption")
            if isinstance(caption, str) and caption:
                text += f" [image: {caption}]"
                report.image_turns += 1
            events.append(
                Episode(
                    f"{sid}/{dia}", t, text, speaker=turn["speaker"], conversation=f"{sid}/{key}"
                )
            )
            report.turns += 1
        last_end = start + (len(turns) - 1) * TURN_GAP_DAYS
    end = offset + last_end

    qa = s.get("qa", [])
    if not isinstance(qa, list):
        raise _fail(file, f"[{i}].qa", "must be a list of questions", qa)
    queries: list[Query] = []
    unanswerable: list[Unanswerable] = []
    for j, q in enumerate(qa):
        path = f"[{i}].qa[{j}]"
        if not isinstance(q, dict):
            raise _fail(file, path, "a question must be an object", q)
        report.questions += 1
        cat = q.get("category")
        text = q.get("question")
        if not isinstance(text, str) or not text.strip():
            report.questions_dropped["no question text"] += 1
            report.note(f"{sid} qa[{j}]: no question text: {text!r}")
            continue
        evidence_raw = q.get("evidence", [])
        if isinstance(evidence_raw, str):
            evidence_raw = [evidence_raw]
        if not isinstance(evidence_raw, list):
            evidence_raw = [evidence_raw]
        if cat == 5:
            report.unanswerable += 1
            unanswerable.append(
                Unanswerable(
                    sid,
                    text,
                    str(q.get("adversarial_answer", q.get("answer", ""))),
                    tuple(str(e) for e in evidence_raw),
                )
            )
            continue
        if cat not in (1, 2, 3, 4):
            report.questions_dropped["unknown category"] += 1
            report.note(f"{sid} qa[{j}]: category {cat!r} is not 1-5")
            continue
        answers: list[str] = []
        for raw in evidence_raw:
            ids, notes = normalize_evidence(raw)
            for problem, frag in notes:
                if problem == "malformed":
                    report.evidence_dropped["malformed"] += 1
                    report.note(f"{sid} qa[{j}]: malformed evidence {frag!r} dropped")
                else:
                    report.evidence_normalized[problem] += 1
                    report.note(f"{sid} qa[{j}]: evidence {frag!r} repaired ({problem})")
            for dia in ids:
                if dia not in turn_time:
                    report.evidence_dropped["no such turn"] += 1
                    report.note(f"{sid} qa[{j}]: evidence {dia!r} names no turn: dropped")
                elif dia in answers:
                    report.evidence_dropped["duplicate"] += 1
                else:
                    answers.append(dia)
        if not answers:
            reason = "no evidence" if not evidence_raw else "no usable evidence"
            report.questions_dropped[reason] += 1
            report.note(f"{sid} qa[{j}]: {reason} ({evidence_raw!r}): question dropped")
            continue
        report.evidence_kept += len(answers)
        if delay is None:
            t = end + TURN_GAP_DAYS
        else:
            t = max(turn_time[a] for a in answers) + delay
        queries.append(
            Query(
                f"{sid}/q{j}",
                round(t, 9),
                text,
                answers=tuple(f"{sid}/{a}" for a in answers),
                k=k,
                group=CATEGORIES[cat],
            )
        )
        report.queries += 1
    events.extend(queries)
    end = max([end] + [q.time for q in queries])
    return events, unanswerable, end


def load(
    path: str | Path,
    *,
    sample: str | None = None,
    query_time: Any = "after",
    k: Any = 10,
    name: str | None = None,
) -> Loaded:
    """Load a LoCoMo file (one sample, or all concatenated) with its report."""
    delay = parse_query_time(query_time)
    where = "locomo: k"
    try:
        k = (
            limits.parse_int(k, where, 1, limits.MAX_K)
            if isinstance(k, str)
            else limits.check_number(k, where, 1, limits.MAX_K, integer=True)
        )
    except ParamError as e:
        raise ScenarioError(str(e)) from None
    file, data = _read(path)
    ids = [_sample_id(file, i, s) for i, s in enumerate(data)]
    if len(set(ids)) != len(ids):
        dup = next(x for x in ids if ids.count(x) > 1)
        raise _fail(file, "sample_id", "is used by two samples", dup)
    if sample is not None and sample not in ids:
        raise ScenarioError(
            f"{file}: unknown sample {limits.shown(sample)}; samples: {', '.join(ids)}"
        )
    report = LoadReport(file=file)
    events: list = []
    unanswerable: list[Unanswerable] = []
    offset = 0.0
    for i, s in enumerate(data):
        if sample is not None and ids[i] != sample:
            continue
        evs, unans, end = _sample_events(file, i, s, offset, delay, k, report)
        events += evs
        unanswerable += unans
        offset = end + SAMPLE_GAP_DAYS
    if report.queries == 0:  # nothing to score: every metric would be empty
        dropped = ", ".join(f"{n} {why}" for why, n in sorted(report.questions_dropped.items()))
        raise ScenarioError(
            f"{file}: {'sample ' + sample if sample else 'the file'} has no usable question "
            f"(qa: {report.questions} questions, {report.unanswerable} unanswerable"
            f"{'; dropped: ' + dropped if dropped else ''}); a question needs a category 1-4 "
            "and evidence naming a dia_id"
        )
    # episodes before queries at equal times; otherwise time order, file order within
    rank = {Episode: 0, Query: 1}
    order = sorted(range(len(events)), key=lambda x: (events[x].time, rank[type(events[x])], x))
    events = [events[x] for x in order]
    which = sample or "all samples"
    stream = Stream(
        tuple(events),
        name=name or f"locomo:{file}" + (f",sample={sample}" if sample else ""),
        description=f"LoCoMo {which}: {report.turns} turns, {report.queries} questions "
        f"(query time {query_time or 'after'})",
        meta=(
            ("generator", "locomo"),
            ("text_embedder", TEXT_STREAM_EMBEDDER),  # turns carry no claims: a real embedder
            ("locomo_report", report.to_dict()),
            ("unanswerable", [u.__dict__ | {"evidence": list(u.evidence)} for u in unanswerable]),
        ),
    )
    return Loaded(stream, report, tuple(unanswerable))


def load_stream(path: str | Path, *, name: str | None = None, **options: Any) -> Stream:
    """The stream of ``locomo:PATH[,sample=..,query_time=..,k=..]``; unknown options are errors."""
    for key in options:
        if key not in _OPTIONS:
            known = ", ".join(f"{k} ({v})" for k, v in _OPTIONS.items())
            raise ScenarioError(
                f"locomo:{path}: unknown option {limits.shown(key)}; known options: {known}"
            )
    return load(path, name=name, **options).stream


SOURCE = ScenarioSource(
    "locomo",
    lambda target, options, seed, name: load_stream(target, name=name, **options),
    lambda: [
        (
            "locomo:PATH[,sample=ID,query_time=after|evidence+DAYS]",
            "LoCoMo conversations from your copy of the official JSON",
        )
    ],
    seeded=False,  # a dataset: the seed changes nothing in the stream
)
