"""Build of the one C accelerator (`overlay._rank`); everything else is in pyproject.toml.

The extension is optional: without a C compiler the install still succeeds and the
gradient uses its pure-Python merge (same results, slower; `drfemu overlay` says which).
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("overlay._rank", ["overlay/_rank.c"], optional=True)])
