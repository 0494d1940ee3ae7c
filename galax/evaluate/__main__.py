"""`python -m galax.evaluate`: galax.evaluate.cli."""

from galax.evaluate.cli import run

if __name__ == "__main__":
  run()
