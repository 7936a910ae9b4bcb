"""Views of graphs and threads: Mermaid and DOT diagrams (`diagram`), a thread's taken path."""

from .thread_path import edges_from_events, thread_path

__all__ = ["edges_from_events", "thread_path"]
