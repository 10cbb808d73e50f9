"""Start, follow and inspect agent runs: the Python API and the `stalwart` command.

The package imports none of its modules, so the command line starts without importing the Temporal client; import
each name from its module (`stalwart.client.api`, `stalwart.client.agent_files`, ...), or the public ones from
`stalwart` itself.
"""
