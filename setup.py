"""Build of the C accelerators (`overlay._rank`, `overlay._cyclon`, `nodes._engine`);
everything else is in pyproject.toml.

The extensions are optional: without a C compiler the install still succeeds, and the
gradient and Cyclon use their pure-Python merges, the runtime its pure-Python delivery loop,
tally and `send` (same results, slower; `drfemu overlay` and `drfemu bench` say which).
"""

from setuptools import Extension, setup

setup(ext_modules=[
    Extension("overlay._rank", ["overlay/_rank.c"], optional=True),
    Extension("overlay._cyclon", ["overlay/_cyclon.c"], optional=True),
    Extension("nodes._engine", ["nodes/_engine.c"], optional=True),
])
