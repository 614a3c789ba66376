"""The benchmark commands: ``python -m benchmarks COMMAND [ARGS ...]``.

``python -m benchmarks`` alone (or ``-h``) lists the commands; ``python -m benchmarks
COMMAND -h`` shows one's arguments. The pytest-benchmark suites themselves run with
``python -m pytest benchmarks`` (benchmarks/README.md).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

# command -> (module holding its ``main(argv)``, what it does); each module is imported only
# when its command runs (the child commands' memory is measured: memchild, simrun)
COMMANDS: dict[str, tuple[str, str]] = {
    "report": (
        "benchmarks.report",
        "every benchmark module; writes results/benchmarks.md, .json and the latency figure",
    ),
    "scaling": (
        "benchmarks.bench_scaling",
        "every policy's year against keep-all's, growth exponent; its log and table",
    ),
    "ten-year": (
        "benchmarks.bench_tenyear",
        "the ten-year steady stream per policy; its table",
    ),
    "profiles": (
        "benchmarks.profiles",
        "a cProfile summary per policy at a tenth of the steady year; its table",
    ),
    "ingest-steps": (
        "benchmarks.ingest_steps",
        "named steps of a policy timed in both modes of the batched-ingest day",
    ),
    "actr-groups": (
        "benchmarks.bench_actr_groups",
        "the ACT-R presentation kernels' grouping rule against a grid of rules",
    ),
    "fingerprint": (
        "benchmarks.fingerprint",
        "sha256 of policies' runs on the synthetic profiles (--save, --check)",
    ),
    "simrun": (
        "benchmarks.simrun",
        "one timed run of a policy through the steady stream, as JSON",
    ),
    "memchild": (
        "benchmarks.memchild",
        "the peak-memory benchmark's child process",
    ),
}


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = ["usage: python -m benchmarks COMMAND [ARGS ...]", "", "commands:"]
    lines += [f"  {name:<{width}}  {what}" for name, (_, what) in COMMANDS.items()]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        print(usage())
        return 0
    name, rest = args[0], args[1:]
    if name not in COMMANDS:
        print(usage(), file=sys.stderr)
        print(f"python -m benchmarks: error: unknown command {name!r}", file=sys.stderr)
        return 2
    from memsim.workbench.cli.main import user_command

    module = importlib.import_module(COMMANDS[name][0])
    return user_command(f"python -m benchmarks {name}", lambda: module.main(rest))


if __name__ == "__main__":
    sys.exit(main())
