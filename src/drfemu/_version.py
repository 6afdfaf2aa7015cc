"""drfemu's version, declared once: the package metadata (`pyproject.toml`'s dynamic version)
and `drfemu --version` read it here, so a source tree that was never installed knows it too."""

__version__ = "0.1.0"
