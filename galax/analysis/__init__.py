"""Analyses of the papers' claims (numpy and scipy only; no training)."""
