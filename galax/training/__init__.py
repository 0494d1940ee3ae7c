"""The training loop and what it reports: clock, header, result, progress, metrics,
tracking, energy."""
