"""Markdown, figures and HTML made from sweeps."""
