"""Workloads: the generated ones by name (`registry`), the other builders (synthetic, online,
fault schedules, trace extracts) and the run point that a sweep, the CLI and the API share."""
