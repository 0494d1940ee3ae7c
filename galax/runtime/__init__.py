"""What keeps a run alive and its files whole: checkpoints, the workdir and its lock,
preemption, lost peers, supervision, JAX's noise."""
