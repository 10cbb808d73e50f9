"""Workers and the embedded dev server."""
