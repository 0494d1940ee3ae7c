"""The papers' claims as learning experiments (`python -m experiments.claims`)."""
