"""Benchmarks of the agent loop against bare Temporal workflows; run them as `python -m bench.<name>` from the
repository root."""
