"""The maths of an update: types, networks, rollout, returns, losses, optimizers,
divergence flags."""
