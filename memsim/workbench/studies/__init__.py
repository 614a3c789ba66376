"""Studies: each takes run definitions or finished runs and returns DataFrames (compare,
calibrate, sweep, tune, robustness, drift, curves, claims). They import runs, stats and the
engine, never present or cli."""
