"""Rules that vouch for a healthy run (the verdict is healthy only when one does)."""
