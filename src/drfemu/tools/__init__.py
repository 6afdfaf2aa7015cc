"""What checks and measures runs: the engine benchmark, the determinism checker, the log-only
checker and bounded process pools."""
