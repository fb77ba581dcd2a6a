"""Histogram: atomics, privatisation, and what skewed data does to them (being built: see data.py)."""
