"""A suite's registered predictions: the file format (model) and their check against a run's
scores (evaluate)."""
