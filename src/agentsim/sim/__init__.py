"""Simulation: the DES and the vectorised fast path, context and cache, workloads, per-run records,
``simulate()``, and ``Results`` (tables and summary statistics, no figures), and when a variant pays off.
"""
