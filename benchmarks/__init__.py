"""galax's benchmarks: each module a command, run from the checkout's root as
`python -m benchmarks.<name> --help` (docs/benchmarks.md)."""
