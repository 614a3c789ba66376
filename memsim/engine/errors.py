"""Errors a user can cause. The CLI prints these as one line and exits non-zero.

Every message names the thing that is wrong (file, field, id) and the offending value.
Anything that is *not* a MemsimError is a bug in memsim and keeps its traceback.
"""


class MemsimError(Exception):
    """Base class for mistakes in user input (files, ids, parameters, vectors)."""


class StreamError(MemsimError):
    """An event stream is malformed: bad field, events out of time order, duplicate id."""


class ScenarioError(MemsimError):
    """A scenario spec or file cannot be loaded (names file, path inside it and value)."""


class ParamError(MemsimError):
    """An impossible parameter value (a probability of 1.5, a negative half-life)."""


class UnknownIdError(MemsimError, KeyError):
    """An unknown policy, scenario, metric or suite id."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class VectorError(MemsimError):
    """A NaN, infinite or zero-norm vector, or a vector of the wrong shape."""


class PolicyContractError(AssertionError):
    """A policy broke the engine's contract (a ranking longer than k, a memory that is not
    retrievable, an illegal status change, an answer that is not an Outcome). The message
    names the policy class, the call and the offending value. A bug in the policy, not in
    user input, so it is not a MemsimError and keeps its traceback; it subclasses
    AssertionError so conformance checks that expect an assertion still catch it."""
