"""Build of the C accelerators (`overlay._rank`, `overlay._cyclon`, `overlay._exchange`,
`nodes._engine`, `protocols._gini`); everything else is in pyproject.toml.

The extensions are optional: without a C compiler the install still succeeds, and the
gradient and Cyclon use their pure-Python merges and exchanges, the runtime its pure-Python
delivery loop, tally and `send`, PDGDRF its pure-Python Gini test (same results, slower;
`drfemu overlay` and `drfemu bench` say which; `protocols.compiled` decides).
"""

from setuptools import Extension, setup

HEADERS = ["nodes/_accelerator.h", "overlay/_stock_draw.h"]


def accelerator(name: str, source: str) -> Extension:
    return Extension(name, [source], include_dirs=["nodes", "overlay"], depends=HEADERS, optional=True)


setup(ext_modules=[
    accelerator("drfemu.overlay._rank", "overlay/_rank.c"),
    accelerator("drfemu.overlay._cyclon", "overlay/_cyclon.c"),
    accelerator("drfemu.overlay._exchange", "overlay/_exchange.c"),
    accelerator("drfemu.nodes._engine", "nodes/_engine.c"),
    accelerator("drfemu.protocols._gini", "protocols/_gini.c"),
])
