"""drfemu: an emulator of distributed, gossip-overlay cluster schedulers that allocate
multi-resource tasks fairly."""
