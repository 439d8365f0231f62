"""Pure numeric helpers over series (arrive with the rules engine)."""
