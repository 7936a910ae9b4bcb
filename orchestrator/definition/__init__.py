"""The file format: models, loading with source positions, and role output contracts."""
