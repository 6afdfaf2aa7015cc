"""The actor runtime and the node roles: the loop and its clocks (virtual and live), the network,
the event trace, and the users, gateways, schedulers, overlay peers and servers a run is made of."""
