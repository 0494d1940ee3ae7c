"""`python -m galax.aot`: galax.aot.compile."""

from galax.aot.compile import run

if __name__ == "__main__":
  run()
