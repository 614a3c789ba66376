"""Runs: definitions, execution (one run, grids of runs on any executor), the results store
and the executors. The lowest floor of the workbench: it imports only the engine."""
