"""Shared test configuration: hypothesis profiles and the location of shared data."""

import os
from pathlib import Path

# Small matrices dominate simulations: one BLAS thread is faster than two fighting for a
# shared 2-core machine (set before numpy loads; benchmarks choose their own threads).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import matplotlib
from hypothesis import HealthCheck, settings

matplotlib.use("Agg")

# No deadlines: these machines are shared and noisy; speed is measured in benchmarks/.
settings.register_profile(
    "dev", deadline=None, max_examples=50, suppress_health_check=[HealthCheck.too_slow]
)
# CI: derandomized so a red CI is reproducible from its log.
settings.register_profile(
    "ci",
    deadline=None,
    max_examples=50,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


def _import_all_sources() -> None:
    """Import every module of the project's source packages now, before any test draws.

    Hypothesis (>= 6.131) mixes into its draws the literal constants of every *local* module in
    ``sys.modules`` at the time of the draw (hypothesis.internal.conjecture.providers,
    ``_get_local_constants``). Which modules are loaded depends on which tests ran before, so
    the same derandomized test drew different examples alone and inside the full suite (the
    threshold properties of docs/properties.md drew cosmo 0.531 -> 0.562 in one and not the
    other). With every source module loaded up front the pool, and so every draw, no longer
    depends on test order or selection. Test modules are not in the pool (hypothesis skips them).
    """
    import importlib

    # by file, not pkgutil: memsim.engine and memsim.workbench are namespace packages
    for pkg in ("memsim", "policies", "scenarios"):
        for f in sorted((REPO / pkg).rglob("*.py")):
            parts = f.relative_to(REPO).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            if parts[-1] != "__main__":
                importlib.import_module(".".join(parts))


REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
LOCOMO_DEV = SHARED / "data" / "locomo" / "locomo-dev.json"

_import_all_sources()
