"""Checkpoint layouts and the resumability audit (arrives with ``autopsy ckpt``)."""
