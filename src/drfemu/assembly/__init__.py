"""A run put together: its config, its nodes and set-up, the fault injector, the `Run` that owns
the loop and its observers, and the overlay-only run."""
