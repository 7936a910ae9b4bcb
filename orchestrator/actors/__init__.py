"""Actors: who plays a role. The only source of non-determinism in a thread."""
