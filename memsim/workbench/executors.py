"""Where a grid of runs executes: this process, local processes, or Dask.

``--jobs N`` uses a process pool (the default executor of :func:`memsim.workbench.api.run_grid`);
``--dask local:N`` starts a Dask ``LocalCluster`` of N single-threaded worker processes for the
user, and ``--dask tcp://HOST:PORT`` joins an existing scheduler. Results are collected in
definition order, so every executor gives the same bytes.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from concurrent.futures import Executor

from memsim.engine.errors import ParamError

_LOCAL = re.compile(r"^local:(\d+)$")
_ADDRESS = re.compile(r"^(tcp|tls|inproc|ws|wss)://[^\s/]+(:\d+)?$")
CONNECT_TIMEOUT_S = 10


@contextlib.contextmanager
def dask_executor(address: str | None) -> Iterator[Executor | None]:
    """An executor for ``--dask`` (None when no address is given); the cluster it started, if
    any, is closed on exit. A malformed or unreachable address is a one-line ParamError."""
    if not address:
        yield None
        return
    from dask.distributed import Client, LocalCluster

    m = _LOCAL.match(address)
    if m:
        n = int(m.group(1))
        if n < 1:
            raise ParamError(f"--dask {address!r}: local:N needs N >= 1")
        with (
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
    try:
        yield client.get_executor()
    finally:
        client.close()
