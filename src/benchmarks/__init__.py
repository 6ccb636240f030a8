"""Benchmarks: timings and peers measured side by side in one run, each a ``python -m benchmarks.<name>``
script; and ``benchmarks.regenerate_docs``, which regenerates the figures the README quotes.

Layering: benchmarks may import ``greedy``, ``optitree`` and ``experiments``; nothing imports them.
"""
