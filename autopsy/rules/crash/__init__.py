"""Crash rules: a rank (or the single process) raised an exception that ended the run."""
