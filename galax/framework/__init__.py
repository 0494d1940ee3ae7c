"""What every algorithm is made of, apart from the algorithms themselves.

  settings.py   `RunSettings`: what the compiled program reads of a run's config, read once
  spec.py       `AlgorithmSpec`: what the rest of galax may know about an algorithm
  plan.py       `ExecutionPlan`: how a run executes on its devices (the 'auto' rules)
  update.py     `Setup`, `LearnerState`, the update's shared pieces (`block_policy`,
                `chunked`, `scan_loop`, `finish_update`) and `compile_step`
  algorithm.py  `Algorithm`, the compiled program a builder returns, and its fresh state

The algorithms (galax/algorithms/) build on these; their registry lives beside them.
"""
