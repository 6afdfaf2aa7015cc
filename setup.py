"""Build of the C accelerators (`overlay._rank`, `overlay._cyclon`, `overlay._exchange`,
`nodes._engine`, `protocols._gini`); everything else is in pyproject.toml.

The extensions are optional: without a C compiler the install still succeeds, and the
gradient and Cyclon use their pure-Python merges and exchanges, the runtime its pure-Python
delivery loop, tally and `send`, PDGDRF its pure-Python Gini test (same results, slower;
`drfemu overlay` and `drfemu bench` say which; `protocols.compiled` decides).
"""

from setuptools import Extension, setup

setup(ext_modules=[
    Extension("drfemu.overlay._rank", ["overlay/_rank.c"], optional=True),
    Extension("drfemu.overlay._cyclon", ["overlay/_cyclon.c"], optional=True),
    Extension("drfemu.overlay._exchange", ["overlay/_exchange.c"], optional=True),
    Extension("drfemu.nodes._engine", ["nodes/_engine.c"], optional=True),
    Extension("drfemu.protocols._gini", ["protocols/_gini.c"], optional=True),
])
