"""Where the batched-ingest day goes: a policy's named steps timed in both modes of its day.

    python -m benchmarks ingest-steps POLICY DAY [METHOD ...] [--rounds N] [--free METHOD]

bench_ingest's case (the ``steady`` year, the policy warmed up on the days before the day
before ``DAY``, each round a copy that has just run the day before), ingested batched and one
episode at a time in turn, ``--rounds`` times. Each named method of the policy (an instance
attribute wraps it on the copy; a dotted name such as ``llm.summarize`` names a method of an
object the policy holds; a call inside another named one counts in the outer only) is timed
per day, and the outcomes of the two modes are checked identical. Each round runs each mode
bare, for the day's time, and again with the steps wrapped, for theirs: the wrappers slow a
day by more than they record in the steps (on Personal AI's day 240, ~1 ms of a ~24 ms
batched day against ~0.1 ms recorded), so the days come from the bare runs and only what a
wrapper records itself (a wrapped no-op's, per call) is taken off the steps. Printed:
per step its calls and milliseconds in each mode's fastest wrapped round, each mode's
fastest bare day and the rest of it, and two ratios: one-by-one / batched (the benchmark's
ratio, its best of rounds) and one-by-one / the named steps of the batched day: the ratio if
the batch cost nothing but those steps, a ceiling while they cost what they do in the batch
(steps both modes take alike, such as the decisions the document makes in order, bound what
batching alone can gain).
With ``--free METHOD`` (repeatable), each round also runs each mode with those methods
answering from a recording of their answers (one untimed run of the same mode before the
rounds; their work skipped, their answers the same, so the outcomes are checked identical):
the day as it would be if those steps cost nothing, and one-by-one's day as it is over the
batched day so: the ratio no faster form of those steps alone could pass, whatever the
rest of the day costs meanwhile. A free method must return what its callers do not change.
Sizes shrink under MEMSIM_BENCH_SMOKE=1 as bench_ingest's do.
"""

from __future__ import annotations

import argparse
import functools
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from benchmarks import ingest_day
from benchmarks.workloads import registered
from memsim.engine.errors import ParamError
from memsim.engine.events import Episode

BATCHED, ONE_BY_ONE = "batched", "one_by_one"  # ingest_day.ingest_modes' keys
LABEL = {BATCHED: "batched", ONE_BY_ONE: "one by one"}
_NONE = object()  # (no instance attribute of that name before the step was wrapped)
_MISSING = object()  # (no attribute of that name on the path to a step)
# per step name, what replaces the step for a round, made from the step
Wrappers = Mapping[str, Callable[[Callable], Callable]]


def _timed(
    steps: dict[str, list[float]], calls: dict[str, int], depth: list[int], name: str, fn: Callable
) -> Callable:
    """``fn`` counted in ``calls[name]`` and timed into ``steps[name]``'s last entry when no
    other named step is running (so the steps' times add up to no more than the day)."""

    def timed(*args: Any, **kwargs: Any) -> Any:
        calls[name] += 1
        if depth[0]:
            return fn(*args, **kwargs)
        depth[0] += 1
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            steps[name][-1] += time.perf_counter() - t0
            depth[0] -= 1

    return timed


def _recording(log: list[Any], fn: Callable) -> Callable:
    """``fn``, each answer appended to ``log``."""

    def recording(*args: Any, **kwargs: Any) -> Any:
        out = fn(*args, **kwargs)
        log.append(out)
        return out

    return recording


def _replaying(log: list[Any], name: str, step: Callable | None = None) -> Callable:
    """A stand-in for ``step`` answering the calls in turn with ``log``'s answers, doing
    nothing else (``step`` is what it replaces: as a round's wrapper of the step)."""
    answers = iter(log)

    def replaying(*args: Any, **kwargs: Any) -> Any:
        try:
            return next(answers)
        except StopIteration:
            raise AssertionError(f"free step {name!r}: called more often than recorded") from None

    return replaying


def _owner(pol: Any, name: str) -> tuple[Any, str]:
    """The object a dotted step name's method is looked up on (``llm.summarize``: the
    policy's LLM) and the method's name; the owner None where an object on the path is
    (not made yet: an index trained on demand), ``_MISSING`` where one is not there."""
    path, _, attr = name.rpartition(".")
    owner = pol
    for part in path.split(".") if path else ():
        owner = getattr(owner, part, _MISSING)
        if owner is None or owner is _MISSING:
            break
    return owner, attr


def _check(pol: Any, policy_id: str, methods: Sequence[str], made_later: bool) -> None:
    """Every step names a method of ``pol``; with ``made_later``, a path through an object
    not made yet passes, to be checked again once the policy is warmed up."""
    for name in methods:
        owner, attr = _owner(pol, name)
        if owner is None and made_later:
            continue
        if owner is None or owner is _MISSING or not callable(getattr(owner, attr, None)):
            raise ParamError(f"method {name!r}: policy {policy_id} has no such method")


def measure(
    policy_id: str, day: int, methods: Sequence[str], rounds: int, free: Sequence[str] = ()
) -> dict[str, Any]:
    """Per mode: the day's seconds per round and each named step's; calls per day; with
    ``free``, the day's seconds per round with those steps free (``free_days``)."""
    from memsim.engine import registry
    from memsim.engine.mockllm import MockLLM

    fresh = registry.make(policy_id, llm=MockLLM(seed=0), seed=0)  # (before the stream)
    _check(fresh, policy_id, [*methods, *free], made_later=True)
    events = ingest_day.stream().events
    before, eve, episodes = ingest_day.day_case(events, day)
    if not episodes:
        raise ParamError(f"day={day}: the stream has no episode that day")
    warm = ingest_day.warm_policy(policy_id, before)
    # the LLM's embedder sees the day once, as in bench_ingest (its caches are the shared
    # LLM's, which every copy uses)
    ingest_day.through_eve(warm, eve).ingest(episodes, day + 1.0)
    m = measure_case(warm, eve, episodes, day + 1.0, methods, rounds, policy_id, free=free)
    return {"day": day, **m}


def measure_case(
    warm: Any,
    eve: Sequence[Any],
    episodes: Sequence[Episode],
    now: float,
    methods: Sequence[str],
    rounds: int,
    policy_id: str,
    bare: bool = True,
    free: Sequence[str] = (),
) -> dict[str, Any]:
    """:func:`measure` of a prepared case: ``warm`` (copied per round), the events of the day
    before (``eve``, replayed on each copy) and the day's ``episodes`` at ``now``. Each round
    runs each mode twice, on copies of their own: bare (the day's time, ``days``), then with
    the steps wrapped (their times, ``steps``, and the wrapped day's, ``wrapped_days``),
    since the wrappers slow the whole day by more than the time they add to the steps.
    ``bare`` False: the wrapped runs only (a caller that has timed the days itself, as
    bench_ingest has). ``free``: a third run per round and mode with those steps answering
    from a recording (``free_days``; the module docstring)."""
    _check(warm, policy_id, [*methods, *free], made_later=False)
    modes: dict[str, Callable[[Any], list]] = ingest_day.ingest_modes(episodes, now)
    days: dict[str, list[float]] = {mode: [] for mode in modes}
    wrapped_days: dict[str, list[float]] = {mode: [] for mode in modes}
    free_days: dict[str, list[float]] = {mode: [] for mode in modes}
    steps: dict[str, dict[str, list[float]]] = {m: {n: [] for n in methods} for m in modes}
    calls = {mode: dict.fromkeys(methods, 0) for mode in modes}
    outcomes: dict[str, list] = {}
    answers: dict[str, dict[str, list]] = {mode: {name: [] for name in free} for mode in modes}
    if free:  # each mode's answers of the free steps, from an untimed run of its own
        for mode, run in modes.items():
            log = answers[mode]
            recorders: Wrappers = {n: functools.partial(_recording, log[n]) for n in free}
            outcomes[mode] = _run_round(warm, eve, run, recorders, [])

    def bare_by(mode: str) -> Wrappers:
        return {}

    def timed_by(mode: str) -> Wrappers:
        depth = [0]
        for name in methods:
            steps[mode][name].append(0.0)
        return {
            name: functools.partial(_timed, steps[mode], calls[mode], depth, name)
            for name in methods
        }

    def replayed_by(mode: str) -> Wrappers:
        log = answers[mode]
        return {n: functools.partial(_replaying, log[n], n) for n in free}

    for _ in range(rounds):
        for mode, run in modes.items():
            runs: list[tuple[dict[str, list[float]], Callable[[str], Wrappers]]] = []
            if bare:
                runs.append((days, bare_by))
            runs.append((wrapped_days, timed_by))
            if free:
                runs.append((free_days, replayed_by))
            for into, wrappers in runs:
                out = _run_round(warm, eve, run, wrappers(mode), into[mode])
                if outcomes.setdefault(mode, out) != out:
                    raise AssertionError(
                        f"{policy_id}: {LABEL[mode]} outcomes differ between rounds"
                    )
    if outcomes[BATCHED] != outcomes[ONE_BY_ONE]:
        raise AssertionError(f"{policy_id}: batched and one-by-one outcomes differ")
    return {
        "policy": policy_id,
        "episodes": sum(isinstance(e, Episode) for e in episodes),
        "days": days,
        "wrapped_days": wrapped_days,
        "free": list(free),
        "free_days": free_days,
        "steps": steps,
        "calls": {m: {k: v // rounds for k, v in c.items()} for m, c in calls.items()},
        "wrapper_seconds": wrapper_cost(),
    }


def _run_round(
    warm: Any,
    eve: Sequence[Any],
    run: Callable[[Any], list],
    wrappers: Wrappers,
    days: list[float],
) -> list:
    """One mode's day on a copy that has run the day before, each step named in
    ``wrappers`` replaced by its wrapper of the step and taken off after; its time appended
    to ``days``; its outcomes."""
    pol = ingest_day.through_eve(warm, eve)
    wrapped = []
    try:
        for name, wrapper in wrappers.items():
            owner, attr = _owner(pol, name)
            fn = getattr(owner, attr)
            had = getattr(owner, "__dict__", {}).get(attr, _NONE)
            try:
                setattr(owner, attr, wrapper(fn))
            except AttributeError:  # (__slots__, a read-only attribute)
                raise ParamError(f"method {name!r}: cannot be timed on its object") from None
            wrapped.append((owner, attr, had))
        with ingest_day.collecting_new():
            t0 = time.perf_counter()
            out = run(pol)
            days.append(time.perf_counter() - t0)
    finally:  # (the LLM is the warmed policy's, shared by every copy)
        for owner, attr, had in reversed(wrapped):
            if had is _NONE:
                delattr(owner, attr)
            else:
                setattr(owner, attr, had)
    return out


def wrapper_cost(calls: int = 20_000) -> float:
    """Seconds a step's wrapper adds to the time it records for a call: what a wrapped
    no-op records per call (a clock read and the call) less the bare no-op call, the least
    of five rounds."""

    def noop() -> None:
        return None

    recorded = []
    bare = []
    for _ in range(5):
        steps: dict[str, list[float]] = {"noop": [0.0]}
        timed = _timed(steps, {"noop": 0}, [0], "noop", noop)
        for _ in range(calls):
            timed()
        recorded.append(steps["noop"][0] / calls)
        t0 = time.perf_counter()
        for _ in range(calls):
            noop()
        bare.append((time.perf_counter() - t0) / calls)
    return max(0.0, min(recorded) - min(bare))


def fastest(m: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per mode: its fastest bare day (the benchmark's best of its rounds), and of its
    fastest wrapped round each named step's seconds and their sum, less the time the
    wrappers record themselves (``wrapper_seconds`` a call)."""
    out = {}
    for mode, days in m["days"].items():
        wrapped = m["wrapped_days"][mode]
        r = min(range(len(wrapped)), key=wrapped.__getitem__)
        own = m["wrapper_seconds"]
        steps = {
            name: max(0.0, times[r] - own * m["calls"][mode][name])
            for name, times in m["steps"][mode].items()
        }
        day = min(days) if days else float("nan")
        out[mode] = {"day": day, "steps": steps, "named": sum(steps.values())}
    return out


def ceiling(m: dict[str, Any], one_by_one: float | None = None) -> float:
    """One-by-one's fastest day (``one_by_one`` seconds when given: the caller's own timing
    of it) over the named steps of the fastest wrapped batched day (:func:`fastest`): the
    ratio a batch that cost nothing but those steps would reach. NaN when nothing named was
    timed."""
    best = fastest(m)
    named = best[BATCHED]["named"]
    day = best[ONE_BY_ONE]["day"] if one_by_one is None else one_by_one
    return day / named if named > 0 else float("nan")


def report(m: dict[str, Any]) -> str:
    """The table and the ratios, of each mode's fastest round."""
    best = fastest(m)
    b, o = best[BATCHED], best[ONE_BY_ONE]
    lines = [
        f"{m['policy']}, day {m['day']} ({m['episodes']} episodes), "
        f"each mode's fastest of {len(m['days'][BATCHED])} rounds",
        "| step | calls {0} | ms {0} | calls {1} | ms {1} |".format(*LABEL.values()),
        "| --- | --- | --- | --- | --- |",
    ]
    for name in b["steps"]:
        cells = [
            f"{m['calls'][mode][name]} | {best[mode]['steps'][name] * 1e3:.2f}"
            for mode in (BATCHED, ONE_BY_ONE)
        ]
        lines.append(f"| {name} | {' | '.join(cells)} |")
    rest = [f"{(x['day'] - x['named']) * 1e3:.2f}" for x in (b, o)]
    lines.append(f"| the rest of the day | | {rest[0]} | | {rest[1]} |")
    lines.append(f"| the day | | {b['day'] * 1e3:.2f} | | {o['day'] * 1e3:.2f} |")
    wrapped = [min(m["wrapped_days"][mode]) * 1e3 for mode in (BATCHED, ONE_BY_ONE)]
    lines.append(
        f"the fastest day with the steps wrapped: {wrapped[0]:.2f} / {wrapped[1]:.2f} ms; what "
        f"a wrapper records itself, ~{m['wrapper_seconds'] * 1e6:.2f} us a call, is taken off "
        "the steps"
    )
    lines.append(f"one-by-one / batched: {o['day'] / b['day']:.2f}x")
    if b["named"] > 0:
        lines.append(
            f"one-by-one / the named steps of the batched day: {ceiling(m):.2f}x "
            "(the ratio if the batch cost nothing else)"
        )
    if m.get("free"):
        free = ", ".join(m["free"])
        fb, fo = (min(m["free_days"][mode]) for mode in (BATCHED, ONE_BY_ONE))
        lines.append(
            f"the fastest day with {free} free: {fb * 1e3:.2f} / {fo * 1e3:.2f} ms; "
            f"one-by-one as it is / that batched day: {o['day'] / fb:.2f}x (no faster form of "
            "those steps alone reaches more)"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks ingest-steps")
    ap.add_argument("policy")
    ap.add_argument("day", type=int, help="the day of the steady year ingested")
    ap.add_argument("methods", nargs="*", help="the policy's methods to time")
    ap.add_argument("--rounds", type=int, default=15, help="rounds of both modes (default 15)")
    ap.add_argument(
        "--free",
        action="append",
        default=[],
        metavar="METHOD",
        help="a method answering from a recording of its answers (repeatable)",
    )
    a = ap.parse_args(argv)
    registered([a.policy])  # an unknown policy id: one line, before the stream is built
    if a.rounds < 1:
        raise ParamError(f"--rounds={a.rounds}: need at least 1")
    if not 1 <= a.day < ingest_day.HORIZON:
        raise ParamError(f"day={a.day}: need 1 <= day < {ingest_day.HORIZON:g}")
    print(report(measure(a.policy, a.day, a.methods, a.rounds, a.free)))
    return 0
