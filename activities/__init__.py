"""Activities: every piece of the agent loop that touches the world (models, tools)."""
