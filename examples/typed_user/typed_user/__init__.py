"""A user-side package that exercises kvoffload's public API under ``mypy --strict``."""
