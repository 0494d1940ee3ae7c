"""Compiling for accelerators without one: targets, the compile command (`python -m
galax.aot`) and HLO cost estimates."""
