"""Slow-run rules: where the time of a training run went (data, stragglers, stalls, MFU)."""
