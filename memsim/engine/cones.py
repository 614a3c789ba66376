"""A store's rows partitioned into cones around unit centroids (:class:`Cones`): exact range
searches that read only the lists a query's cone can reach."""

from __future__ import annotations

import math

import numpy as np

from . import similarity

# Angles (radians) the cone bound gives away to the rounding of arccos of float64 products
# of float32 unit vectors (off by ~1e-7 at most): far more than that, far less than matters.
_CONE_ANGLE_SLACK = 1e-6
# What a query's float32 products with the unit centroids may be off from the exact ones:
# summation error of at most dim x 2**-24 x sum |u_i q_i| <= 2.3e-5 at 384 dimensions for unit
# vectors, and the centroids' rounding to float32; the threshold a product is compared with
# is lowered by this much (a list read for nothing now and then, never one skipped wrongly).
_CONE_PRODUCT_SLACK = 1e-4
# rows put into their lists at a time (Cones.cover)
_COVER_ROWS = 4096


class Cones:
    """The store's rows partitioned around unit centroids, each row in its nearest
    centroid's list (any partition would do: only speed depends on it), with per list the
    largest angle between the centroid and a row of it, and the list's rows copied
    contiguously. A row x of a list with centroid u and largest angle A, and a unit query q,
    have angle(x, q) >= angle(q, u) - A (the triangle inequality of angles), so
    x . q <= cos(max(0, angle(q, u) - A)): a list whose bound stays under a threshold holds
    no row reaching it and is not read. Equivalently, with the angles on the left at most
    pi: a list can hold a row reaching r only if q . u >= cos(A + arccos r), a threshold per
    list and r computed once (until the list grows), so a query costs one product with the
    centroids and a comparison.

    With ``spare`` > 0, a row farther from every centroid than ``spawn_factor`` x the median
    angle of the first rows covered (those the centroids were trained on) is the centroid
    of a new list, up to ``spare`` new lists: rows unlike any the centroids were trained on
    would otherwise widen a list's cone until most queries read it."""

    def __init__(self, centroids: np.ndarray, spare: int = 0, spawn_factor: float = 0.0) -> None:
        c = np.asarray(centroids, dtype=np.float64)
        m, dim = c.shape
        cap = m + spare
        self.centroids = np.zeros((cap, dim))
        self.centroids[:m] = c / np.maximum(np.linalg.norm(c, axis=1, keepdims=True), 1e-300)
        self.centroids32 = self.centroids.astype(np.float32)
        self.lists = int(m)  # centroids in use: the first ones of the arrays
        self.spawn_factor = spawn_factor
        self.spawn_angle = math.inf  # set by the first cover when spare > 0
        self._thresholds: dict[float, np.ndarray] = {}  # per radius, until cover() adds rows
        self.covered = 0  # rows 0..covered-1 are in the lists
        self.size = np.zeros(cap, dtype=np.int64)
        self.ids = [np.zeros(0, dtype=np.int64) for _ in range(cap)]
        self.vectors = [np.zeros((0, dim), dtype=np.float32) for _ in range(cap)]
        self.widest = np.zeros(cap)  # largest angle of a row of each list (0: empty)
        self.owner = np.zeros(0, dtype=np.int64)  # each covered row's list (-1: dropped)

    def drop(self, rows: np.ndarray) -> None:
        """Take covered ``rows`` out of their lists for good (a list's widest angle stays:
        still a bound)."""
        rows = np.unique(rows[rows < self.covered])
        rows = rows[self.owner[rows] >= 0]
        if not len(rows):
            return
        lists = np.unique(self.owner[rows])
        self.owner[rows] = -1
        for lst in lists.tolist():
            k = int(self.size[lst])
            keep = self.owner[self.ids[lst][:k]] >= 0
            m = int(keep.sum())
            self.ids[lst][:m] = self.ids[lst][:k][keep]
            self.vectors[lst][:m] = self.vectors[lst][:k][keep]
            self.size[lst] = m
        self._thresholds.clear()  # emptied lists are never read

    def cover(self, E: np.ndarray) -> None:
        """Put the rows added to ``E`` since the last call into their lists (a few thousand
        at a time: a decade's store, covered at once, made float64 temporaries of ~0.5 GB)."""
        for lo in range(self.covered, len(E), _COVER_ROWS):
            self._cover(E, min(lo + _COVER_ROWS, len(E)))

    def _cover(self, E: np.ndarray, hi: int) -> None:
        """Put rows ``covered`` .. ``hi`` - 1 of ``E`` into their lists."""
        lo = self.covered
        X = E[lo:hi]
        X64 = X.astype(np.float64)
        X64 /= np.linalg.norm(X64, axis=1, keepdims=True)
        cos = X64 @ self.centroids[: self.lists].T
        if self.lists < len(self.size) and self._spawn(X64, cos.max(axis=1)):
            cos = X64 @ self.centroids[: self.lists].T
        owner = np.argmax(cos, axis=1)
        angle = np.arccos(np.clip(cos[np.arange(len(X)), owner], -1.0, 1.0))
        if len(self.owner) < hi:
            grown = np.full(max(hi, 2 * len(self.owner)), -1, dtype=np.int64)
            grown[: len(self.owner)] = self.owner
            self.owner = grown
        self.owner[lo:hi] = owner
        for lst in np.unique(owner).tolist():
            mine = np.flatnonzero(owner == lst)
            k, m = int(self.size[lst]), len(mine)
            # a quarter more room when full: at FSRS's year the copies take 19.1 MiB for 17.5
            # MiB of rows (doubling took 29.3); a list holds ~100 rows, so its more frequent
            # copies cost little
            if k + m > len(self.ids[lst]):
                cap = max(len(self.ids[lst]) + len(self.ids[lst]) // 4, k + m, 8)
                ids = np.empty(cap, dtype=np.int64)
                ids[:k] = self.ids[lst][:k]
                vecs = np.empty((cap, X.shape[1]), dtype=np.float32)
                vecs[:k] = self.vectors[lst][:k]
                self.ids[lst], self.vectors[lst] = ids, vecs
            self.ids[lst][k : k + m] = lo + mine
            self.vectors[lst][k : k + m] = X[mine]
            self.size[lst] = k + m
            self.widest[lst] = max(self.widest[lst], float(angle[mine].max()))
        self.covered = hi
        self._thresholds.clear()  # wider lists: their thresholds again on demand

    def _spawn(self, X64: np.ndarray, nearest_cos: np.ndarray) -> bool:
        """Make each of the unit rows ``X64`` farther than the spawn angle from every
        centroid (those made here included) the centroid of a new list, in row order,
        while spare lists last; whether any was made."""
        angle = np.arccos(np.clip(nearest_cos, -1.0, 1.0))
        if self.covered == 0:  # the rows the centroids were trained on set the angle
            self.spawn_angle = self.spawn_factor * float(np.median(angle))
        first = self.lists
        for r in np.flatnonzero(angle > self.spawn_angle).tolist():
            if self.lists == len(self.size):
                break
            x = X64[r]
            made = self.centroids[first : self.lists] @ x
            if len(made) and math.acos(min(1.0, float(made.max()))) <= self.spawn_angle:
                continue  # near a list made from an earlier row of these
            self.centroids[self.lists] = x
            self.centroids32[self.lists] = x
            self.lists += 1
        return self.lists > first

    def list_thresholds(self, radius: float) -> np.ndarray:
        """Per list, the product with a unit query under which no row of the list reaches
        ``radius`` (float32-safe: lowered by _CONE_PRODUCT_SLACK); +inf for an empty list,
        -inf where the cone's angle reaches pi (every query may find a row)."""
        thr = self._thresholds.get(radius)
        if thr is None:
            widest, size = self.widest[: self.lists], self.size[: self.lists]
            angle = math.acos(min(1.0, max(-1.0, radius))) + widest + _CONE_ANGLE_SLACK
            thr = np.where(angle < math.pi, np.cos(angle), -np.inf)
            thr = np.where(size > 0, thr - _CONE_PRODUCT_SLACK, np.inf)
            self._thresholds[radius] = thr
        return thr

    def reaching(self, v: np.ndarray, radius: float, limit: int | None) -> np.ndarray | None:
        """The lists whose cone can hold a row whose product with unit float32 ``v`` reaches
        ``radius`` (a product with each centroid against its list's threshold); None when
        they hold more than ``limit`` rows."""
        norm = float(np.linalg.norm(v.astype(np.float64)))
        products = self.centroids32[: self.lists] @ v
        reach = np.flatnonzero(products >= self.list_thresholds(radius) * norm)
        if limit is not None and int(self.size[reach].sum()) > limit:
            return None
        return reach

    def rows_above(
        self, v: np.ndarray, radius: float, limit: int | None = None
    ) -> np.ndarray | None:
        """A superset of the rows whose product with unit ``v`` reaches ``radius`` plus
        rounding (every row the bound cannot rule out, screened by its float32 product
        within :data:`similarity.SCREEN_MARGIN` under ``radius``), in no particular order; None
        when the lists to read hold more than ``limit`` rows."""
        v = np.asarray(v, dtype=np.float32)
        reach = self.reaching(v, radius, limit)
        if reach is None:
            return None
        found = [np.zeros(0, dtype=np.int64)]
        for lst in reach.tolist():
            k = int(self.size[lst])
            products = self.vectors[lst][:k] @ v
            hit = np.flatnonzero(products >= radius - similarity.SCREEN_MARGIN)
            if len(hit):
                found.append(self.ids[lst][hit])
        return np.concatenate(found)
