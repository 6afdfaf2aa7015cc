"""Sweep configs, their execution on a process pool or a Dask cluster, records and the tidy
table, the trace replay and the fault campaign."""
