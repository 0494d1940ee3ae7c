"""Evaluating policies: the periodic evaluator (training) and the `python -m
galax.evaluate` command."""
