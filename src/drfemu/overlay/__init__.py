"""Overlays as pure state machines: Cyclon, the gradient and its variants, their messages and the
measures the overlay observers take. Imports the kernel only."""
