"""Config lint: risky or notable settings read from the run's own config (warnings and notes)."""
