"""Build of the C accelerators (`overlay._rank`, `overlay._cyclon`, `nodes._plane`, `nodes._engine`,
`protocols._gini`, `protocols._probe`, `protocols._ddrf`, `overlay._cycle`); everything else is in pyproject.toml.

The extensions are optional: without a C compiler the install still succeeds, and the
gradient and Cyclon use their pure-Python merges and exchanges, the runtime its pure-Python
delivery loop, tally and `send`, PDGDRF its pure-Python Gini test, the probe its Python hearing,
DDRF its Python tick (same results, slower; `drfemu overlay` and `drfemu bench` say which;
`kernel.compiled` decides).
"""

from setuptools import Extension, setup

HEADERS = ["src/native/_accelerator.h", "src/native/_overlay_kernel.h", "src/native/_stock_draw.h",
           "src/native/_descriptors.h", "src/native/_view.h"]


def accelerator(name: str, source: str) -> Extension:
    return Extension(name, [source], include_dirs=["src/native"], depends=HEADERS, optional=True)


setup(ext_modules=[
    accelerator("drfemu.overlay._rank", "src/native/_rank.c"),
    accelerator("drfemu.overlay._cyclon", "src/native/_cyclon.c"),
    accelerator("drfemu.nodes._plane", "src/native/_plane.c"),
    accelerator("drfemu.nodes._engine", "src/native/_engine.c"),
    accelerator("drfemu.protocols._gini", "src/native/_gini.c"),
    accelerator("drfemu.protocols._probe", "src/native/_probe.c"),
    accelerator("drfemu.protocols._ddrf", "src/native/_ddrf.c"),
    accelerator("drfemu.overlay._cycle", "src/native/_cycle.c"),
])
