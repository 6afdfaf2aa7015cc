"""What a run takes and gives: the run parameters and their checks, the result document and its
JSON Schema, the workload and fault-scenario formats, the overlay command's config and result."""
