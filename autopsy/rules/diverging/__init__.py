"""Rules for a training loss that rises (diverges) or spikes while staying finite."""
