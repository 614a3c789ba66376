"""Where a grid of runs executes: this process, local processes, or Dask.

``--jobs N`` uses a process pool (the default executor of
:func:`memsim.workbench.runs.execution.run_grid`); ``--dask local:N`` starts a Dask
``LocalCluster`` of N single-threaded worker processes for the user, and
``--dask tcp://HOST:PORT`` joins an existing scheduler. Results are collected in
definition order, so every executor gives the same bytes.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import contextlib
import multiprocessing
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor
from typing import Any, Protocol, TypeVar

from memsim.engine import limits
from memsim.engine.errors import ParamError

_LOCAL = re.compile(r"^local:(\d+)$")
_ADDRESS = re.compile(r"^(tcp|tls|inproc|ws|wss)://[^\s/]+(:\d+)?$")
CONNECT_TIMEOUT_S = 10
PARENT_POLL_S = 0.5  # how often a worker checks that memsim is still there
# The cluster ``local:N`` starts has no dashboard, so nothing reads its workers' statistical
# profiler (a stack sample every 10 ms) or their fast system and event-loop samples. With
# them a run took ~17% more CPU in a worker than in a pool process, without them 5-10%
# (docs/performance.md, Sweep executors).
LOCAL_CLUSTER_CONFIG = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.system-monitor.interval": "5s",
    "distributed.admin.tick.interval": "1s",
}
_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def worker_count(text: str) -> int:
    """``--jobs``' argparse type: worker processes, an integer >= 1 (argparse prints a
    refusal in one line after the usage and exits 2; 0 or -1 never means "serial" silently)."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid int value: {limits.shown(text)}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"needs 1 or more worker processes, got {n}")
    if n > limits.MAX_WORKERS:  # each is a process started at once: 10**9 would never end
        raise argparse.ArgumentTypeError(
            f"at most {limits.MAX_WORKERS} worker processes, got {limits.shown(n)}"
        )
    return n


def process_pool(jobs: int) -> cf.ProcessPoolExecutor:
    """A pool of ``jobs`` spawned worker processes that die with this process, even when it
    is killed with SIGKILL (no worker, and so no resource tracker, outlives it)."""
    on_main = threading.current_thread() is threading.main_thread()
    return cf.ProcessPoolExecutor(
        max_workers=jobs,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=die_with_parent,
        initargs=(os.getpid(), on_main),
    )


T = TypeVar("T")


class Bar(Protocol):
    def update(self, n: int) -> None: ...
    def close(self) -> None: ...


def map_in_order(
    fn: Callable[..., T],
    calls: Sequence[tuple[Any, ...]],
    *,
    jobs: int = 1,
    executor: Executor | None = None,
    bar: Bar | None = None,
) -> list[T]:
    """``fn(*args)`` for every ``args`` in ``calls``: in this process, on a pool of ``jobs``
    processes made for the occasion, or on ``executor`` (Dask's, say). Results come back in
    the order of ``calls`` whatever finishes first, so every executor gives the same bytes;
    ``bar`` (if any) advances once per finished call and is closed at the end."""
    if jobs < 1:
        raise ParamError(f"jobs={jobs}: needs 1 or more worker processes")
    results: dict[int, T] = {}
    own = None
    if executor is None and jobs > 1 and len(calls) > 1:
        own = executor = process_pool(jobs)
    try:
        if executor is None:
            for i, args in enumerate(calls):
                results[i] = fn(*args)
                if bar is not None:
                    bar.update(1)
        else:
            futures = {executor.submit(fn, *args): i for i, args in enumerate(calls)}
            for fut in cf.as_completed(futures):
                results[futures[fut]] = fut.result()
                if bar is not None:
                    bar.update(1)
    except BaseException:
        if own is not None:  # an error or a signal: the queued calls need not run
            own.shutdown(cancel_futures=True)
            own = None
        raise
    finally:
        if bar is not None:
            bar.close()
        if own is not None:
            own.shutdown()
    return [results[i] for i in range(len(calls))]


def die_with_parent(parent: int, deathsig: bool = True) -> None:
    """Worker initializer: end this process when ``parent`` is gone. On Linux the kernel
    sends SIGKILL at once (prctl PR_SET_PDEATHSIG; only when the pool was made on the main
    thread, since the signal follows the creating thread); everywhere a daemon thread polls
    the parent id as well."""
    if deathsig and sys.platform.startswith("linux"):
        import ctypes
        import signal

        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL))
        except (OSError, AttributeError):  # no libc prctl: the thread below still works
            pass
    if os.getppid() != parent:  # died before the signal was armed
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        os._exit(1)

    threading.Thread(target=watch, name="memsim-parent-watch", daemon=True).start()


@contextlib.contextmanager
def dask_executor(address: str | None) -> Iterator[Executor | None]:
    """An executor for ``--dask`` (None when no address is given); the cluster it started, if
    any, is closed on exit. A malformed or unreachable address is a one-line ParamError."""
    if not address:
        yield None
        return
    import dask
    from dask.distributed import Client, LocalCluster

    m = _LOCAL.match(address)
    if m:
        n = limits.parse_int(m.group(1), "--dask local:N")  # (its length checked first)
        if n < 1:
            raise ParamError(f"--dask {limits.shown(address)}: local:N needs N >= 1")
        limits.at_most("--dask local:N", "workers", n, limits.MAX_WORKERS)
        with (
            dask.config.set(LOCAL_CLUSTER_CONFIG),  # the workers take it at their start
            LocalCluster(
                n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None
            ) as cluster,
            Client(cluster) as client,
        ):
            yield client.get_executor()
        return
    if not _ADDRESS.match(address):
        raise ParamError(
            f"--dask {address!r}: expected local:N or a scheduler address like tcp://HOST:PORT"
        )
    try:
        client = Client(address, timeout=CONNECT_TIMEOUT_S)
    except (OSError, ValueError, TypeError) as e:  # TimeoutError is an OSError
        raise ParamError(
            f"--dask {address!r}: no scheduler answered within {CONNECT_TIMEOUT_S} s ({e})"
        ) from None
    except Exception as e:  # noqa: BLE001 - a peer that is not a scheduler fails in many ways
        # (seen: a service answering garbage makes distributed allocate a 3 EiB frame).
        raise ParamError(
            f"--dask {address!r}: the peer there is not a Dask scheduler "
            f"({type(e).__name__}: {str(e)[:120]})"
        ) from None
    try:
        yield client.get_executor()
    finally:
        client.close()
