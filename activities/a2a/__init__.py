"""Remote agents over the A2A protocol: discover an agent by its card, delegate a task, follow it to its end.

Deliberately empty: workflow code imports `activities.a2a.policy`, and
importing this package must not pull in the HTTP client with it.
"""
