"""The fair-share policy library around DRF (SPEC §6): pure functions over one resource pool."""
