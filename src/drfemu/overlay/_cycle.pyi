"""Types of `src/native/_cycle.c`; the Python references are `overlay.cycle.bootstrap_python` and
`run_cycles_python`."""

from drfemu.overlay.cycle import CycleOverlay

def bootstrap(overlay: CycleOverlay) -> None: ...
def run_cycles(overlay: CycleOverlay, first: int, gradient_turns: list[int]) -> None: ...
