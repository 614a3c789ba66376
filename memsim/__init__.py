"""memsim: a research harness for long-term memory policies of AI assistants.

The public API (lazily imported so ``import memsim`` stays light):

    memsim.list_policies(), memsim.list_scenarios()   -> DataFrames
    memsim.run(policy, scenario, seed=0)              -> per-query metrics
    memsim.compare(policies, scenarios, seeds)        -> (summary, per-query)
    memsim.paired(per_query, metric)                  -> superiority matrix (queries)
    memsim.superiority(per_query, metric)             -> superiority over clusters, Holm p
    memsim.frontier(scenarios, seeds)                 -> references at a budget grid
    memsim.curve(policy, pattern, days, ...)          -> decay curve
    memsim.robustness(policies, scenarios, grid)      -> conclusions x mock modes, verdicts
    memsim.make(policy_id, ...)                       -> a policy object
"""

__version__ = "0.1.0"

_API = {
    "list_policies": "memsim.workbench.runs.execution",
    "list_scenarios": "memsim.workbench.runs.execution",
    "run": "memsim.workbench.runs.execution",
    "compare": "memsim.workbench.studies.compare",
    "paired": "memsim.workbench.stats",
    "summarize": "memsim.workbench.stats",
    "superiority": "memsim.workbench.stats",
    "frontier": "memsim.workbench.studies.calibrate",
    "curve": "memsim.engine.curve",
    "robustness": "memsim.workbench.studies.robustness",
    "make": "memsim.engine.registry",
    "register": "memsim.engine.registry",
}


def __getattr__(name: str):
    if name in _API:
        import importlib

        return getattr(importlib.import_module(_API[name]), name)
    raise AttributeError(f"module 'memsim' has no attribute {name!r}")


__all__ = sorted(_API)
