"""Readers: one module per input kind; ``discover`` walks a run and dispatches."""
