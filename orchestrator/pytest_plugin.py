"""pytest plugin for testing graphs (registered through the `pytest11` entry point)."""
