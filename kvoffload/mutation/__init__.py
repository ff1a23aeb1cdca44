"""Mutation testing of the conformance suite's power (issue 14, item 3).

cosmic-ray (a development dependency) mutates code nobody here wrote — vLLM 0.32's
``CPUOffloadingManager`` and its ``CachePolicy`` classes, copied at run time from the
installed vLLM into a scratch package — and our own reference policies used as a system
under test. The kill test of each mutant is the conformance suite at its default settings
(``check_manager``/``check_policy``: default budget, seed 0, the interface detected) run on
a target built from the mutated module. ``python -m kvoffload mutation run --target NAME``
reproduces a run and writes the report; ``docs/mutation-report.md`` is the committed one.

Modules: ``targets`` (what is mutated, which suites judge it), ``scratch`` (the copies),
``judge`` (the kill test), ``forkserver``/``client`` (a warm process forks one child per
mutant, so vLLM and torch are imported once), ``session`` (cosmic-ray sessions, scope,
seeded sampling), ``report`` (the markdown), ``classified`` (survivors judged by hand).
"""
