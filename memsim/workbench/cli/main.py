"""The ``memsim`` command line: its verbs (``VERBS``, one module each) and the exit codes.

A user mistake (unknown id, malformed file, impossible parameter, an output target that
cannot be written) prints one line, ``memsim: error: ...``, and exits with status 2; so
does a write that fails later (a full disk, a file-size limit). Ctrl-C exits 130, SIGTERM
143, both in one line. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import operator
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from importlib.metadata import version

from memsim.engine.errors import MemsimError

# (verb, help, module under memsim.workbench, its function adding the arguments, its body)
VERBS: tuple[tuple[str, str, str, str, str], ...] = (
    ("list", "registered policies and scenarios", "cli.listing", "add_arguments", "run"),
    (
        "params",
        "a policy's parameters: default, range, seed section",
        "cli.params",
        "add_arguments",
        "run",
    ),
    (
        "run",
        "run one policy on one scenario and print its metrics",
        "cli.run",
        "add_arguments",
        "run",
    ),
    (
        "check",
        "judge a scripted scenario's expect: block (exit 1 when one fails)",
        "cli.check",
        "add_arguments",
        "run",
    ),
    (
        "compare",
        "policies x scenarios x seeds -> a summary table",
        "cli.compare",
        "add_arguments",
        "run",
    ),
    (
        "sweep",
        "policy parameters x scenarios x seeds -> a tidy table",
        "cli.sweep",
        "add_arguments",
        "run",
    ),
    (
        "tune",
        "tune thresholds with Optuna; documented vs tuned, held out",
        "cli.tune",
        "add_arguments",
        "run",
    ),
    (
        "sensitivity",
        "one-at-a-time sensitivity and tornado figures, or Sobol' indices (--sobol N)",
        "cli.sensitivity",
        "add_arguments",
        "run",
    ),
    (
        "robustness",
        "which pairwise conclusions survive other mock-LLM modes",
        "cli.robustness",
        "add_arguments",
        "run",
    ),
    (
        "curve",
        "decay curve of one memory under an access pattern (CSV)",
        "cli.curve",
        "add_arguments",
        "run",
    ),
    (
        "claims",
        "regenerate the table of the seed documents' worked examples",
        "cli.claims",
        "add_arguments",
        "run",
    ),
    (
        "figures",
        "regenerate the PNG figures under results/figures/",
        "cli.figures",
        "add_arguments",
        "run",
    ),
    (
        "bands",
        "an embedder's similarity bands on labelled sentence pairs; --thresholds",
        "cli.bands",
        "add_arguments",
        "run",
    ),
    (
        "drift",
        "each documented policy against its code variant (markdown)",
        "cli.drift",
        "add_arguments",
        "run",
    ),
)


def build_parser() -> argparse.ArgumentParser:
    """Every verb of ``VERBS``, its module imported here rather than at the top: ``main`` sets
    the BLAS thread count first, and that must precede numpy's import."""
    p = argparse.ArgumentParser(
        prog="memsim",
        description="Replay event streams through memory policies of AI assistants and score them.",
    )
    p.add_argument("--version", action="version", version=f"%(prog)s {version('memsim')}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    workbench = __package__.rpartition(".")[0]
    for name, help, module, add_arguments, body in VERBS:
        verb = importlib.import_module(f"{workbench}.{module}")
        s = sub.add_parser(name, help=help)
        getattr(verb, add_arguments)(s)
        s.set_defaults(func=getattr(verb, body))
    return p


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread so that the worker pools, the Dask cluster and the
    resource tracker shut down as on an interrupt (the default action kills memsim at once
    and leaves the tracker warning about leaked semaphores)."""


TERMINATED = 128 + signal.SIGTERM  # the shell's code for a process ended by SIGTERM


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated


# What can go wrong while writing, whatever was checked before: a full disk, a file-size
# limit (`ulimit -f`), a quota, a folder made read-only or removed meanwhile.
WRITE_ERRNOS = frozenset(
    {
        errno.ENOSPC,
        errno.EFBIG,
        errno.EDQUOT,
        errno.EROFS,
        errno.EACCES,
        errno.EPERM,
        errno.EISDIR,
        errno.ENOTDIR,
        errno.EEXIST,
    }
)


def _silence_stdout() -> None:
    """Point stdout at the null device so that the interpreter's final flush of what is
    still buffered neither fails again nor prints a second error."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is no file (redirected in-process)
        pass


def user_command(prog: str, command: Callable[[], object]) -> int:
    """Run a command line's body and return its exit code: a user mistake (a MemsimError, a
    missing file) is one line on stderr and code 2, never a traceback; so is a write that
    fails (full disk, file-size limit: the errno names it); an interrupt 130, SIGTERM 143;
    a reader that left the pipe 0. A body returning no int (None, a result) exits 0. Shared
    by ``memsim`` and the documented ``python -m benchmarks.*`` commands."""
    on_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _raise_terminated) if on_main else None
    try:
        code = command()
        sys.stdout.flush()  # a full disk under stdout shows here, not at the interpreter's exit
        return operator.index(code) if hasattr(code, "__index__") else 0
    except MemsimError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    except FileNotFoundError as e:
        print(f"{prog}: error: no such file: {e.filename}", file=sys.stderr)
        return 2
    except Terminated:
        print(f"{prog}: terminated", file=sys.stderr)
        return TERMINATED
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `memsim list | head`: the reader left; that is not an error
        _silence_stdout()
        return 0
    except OSError as e:
        if e.errno not in WRITE_ERRNOS:
            raise
        where = e.filename if e.filename else "writing the output"
        print(f"{prog}: error: {where}: {e.strerror}", file=sys.stderr)
        _silence_stdout()
        return 2
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def main(argv: Sequence[str] | None = None) -> int:
    # Simulations multiply small matrices, where one BLAS thread beats several contending
    # threads by a wide margin; parallelism comes from --jobs. Must precede numpy's import.
    for var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    parser = build_parser()

    def command() -> object:  # parsing too: a flag's type may refuse a value in one line
        args = parser.parse_args(argv)
        return args.func(args) or 0

    return user_command("memsim", command)


if __name__ == "__main__":
    sys.exit(main())
