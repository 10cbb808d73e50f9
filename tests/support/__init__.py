"""What test modules in more than one folder share; imported as `support.<module>`
(tests/ is on sys.path, as for `wire_server`)."""
