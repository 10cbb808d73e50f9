"""Remote agents over the A2A protocol: discover an agent by its card, delegate a task, follow it to its end.

Deliberately empty: importing this package must not pull in the HTTP client with it.
How workflows schedule these activities is in `workflows/a2a_policy.py`.
"""
