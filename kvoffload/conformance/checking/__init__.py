"""Model checking: ``kvoffload check-exhaustive`` explores every reachable joint state.

``model_checker`` is the engine (breadth-first over distinct fingerprints, shortest
counterexample), ``symmetry`` the hash alphabet and its reduction, ``manager_world`` and
``policy_world`` the lockstep worlds it explores, ``exhaustive`` the command.
"""
