"""Benchmarks behind ``kvoffload bench``: each prints its figures side by side."""
