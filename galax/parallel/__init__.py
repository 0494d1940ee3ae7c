"""The parallel topology: the learner axis (mesh, sharding) and how learners combine."""
