"""Rules for a model that fits its training data while the eval loss gets worse."""
