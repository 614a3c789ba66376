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

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
LOCOMO_DEV = SHARED / "data" / "locomo" / "locomo-dev.json"
