"""The moderator and its data: events, state, commands, outcomes, the rules, the log's view.

Pure: nothing here does I/O (tests/test_core_purity.py checks what importing it loads).
"""
