"""Out-of-memory rules: a GPU allocation failed, or the host ran out of RAM."""
