"""Comparison harness: greedy vs optimal trees, reproducible experiment grids."""
