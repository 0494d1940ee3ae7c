"""Experiment configs (installed as `galax.configs`); load with galax.config.load(name)."""
