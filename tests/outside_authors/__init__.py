"""Managers written by outside authors, from the contract alone (issue-less: the suite's
own test of its power on code nobody who wrote the suite wrote).

Each package holds one author's manager (``manager.make_manager``), the bugs that author
chose to plant in it (``bugs.make_*``, one realistic bug each) and their ``BUGS.md`` (the
bug, the clause, a call sequence that shows it). They were written without reading the
suite, the reference model or our implementation: ``alice_lru`` exact LRU over an
``OrderedDict``, ``bob_arc`` exact ARC, ``carol_clock`` a CLOCK (second chance) policy of
its own (judged with ``--policy any``). ``tests/test_outside_authors.py`` runs the suite on
them as a user would; ``tests/vllm_lane/dave_lru`` is the same for vLLM 0.32's interface.
"""
