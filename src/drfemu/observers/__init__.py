"""What watches a run and contributes sections of its result: the harnesses (endless users and
tasks that end), the task ledger, the network's figures, the fault timeline, the SWM comparison
and the replayable run log."""
