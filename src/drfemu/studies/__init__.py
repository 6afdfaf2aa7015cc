"""Studies that run many runs of their own: the overlay study, the cost curve and the policy
experiments."""
