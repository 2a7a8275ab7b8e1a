"""A suite's registered predictions: the file format (model), their check against a run's
scores (evaluate), a direction decided against the baseline run it names (direction), and a
scored run's predictions checked again, with or without that baseline (check)."""
