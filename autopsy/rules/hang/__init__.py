"""Hang rules: collective timeouts, their laggard, uneven batches, mismatches, init hangs."""
