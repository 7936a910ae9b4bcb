"""The names the format reserves for the runtime (docs/format.md sections 4 and 5).

They live apart from the models so that the contract, which the models use, can name them
without importing the models back.
"""

from __future__ import annotations

START = "$START"  # the graph key holding the edges that begin (and resume) a thread
END = "$END"  # the edge target that finishes a thread
SUSPEND = "$SUSPEND"  # the status any role may reply to suspend the thread
SINGLE_EXIT = "_"  # the status of a role whose schema declares none
RESUME = "resume"  # the `$START` edge taken when a completed thread is continued

GRAPH_SUFFIXES = (".yaml", ".yml")  # what a graph file is called
