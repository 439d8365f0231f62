"""Rules for a training loss that does not go down: flat near its initial value."""
