"""Helpers shared by the test modules: independent oracles (brute forces, a peer solver), instances and
hand-built trees. Plain modules, no tests; the tests import them as ``support.<module>`` (``tests`` is on
pytest's ``pythonpath``)."""
