"""The moderator and its data: events, state, commands, outcomes, the rules, the log's view.

Pure: nothing here reads or writes files, the network or the clock; the one load is the CEL
extension module, on a graph's first guard (tests/test_core_purity.py checks what importing
the moderator loads).
"""
