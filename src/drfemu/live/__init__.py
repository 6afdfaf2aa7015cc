"""Live mode: the nodes of a run on the real clock, over UDP, across processes (`docs/live.md`)."""
