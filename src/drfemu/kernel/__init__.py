"""The kernel: what every layer shares and nothing of ours underlies — errors, parameter
declarations, resources and fairness, events, the wire vocabulary, random streams, durations,
processes, plug-in registries and the choice of C or Python. It imports no other layer."""
