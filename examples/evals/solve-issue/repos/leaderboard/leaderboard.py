"""Rank players by score."""


def ranking(scores):
    """(name, score) pairs, best score first; equal scores by name."""
    return sorted(scores.items(), key=lambda item: item[0])
