"""Rules: one module per rule (arrives with the rules engine)."""
