"""Rendering of runs and findings: terminal, JSON, exports. Rendering only."""
