"""How threads are shown to people, worded once for the command line, the web page and MCP: a
thread's story (`story`), a step's facts (`facts`), a graph's loops (`loops`), a thread's summary
row (`summary`) and counts in words (`plural`). The faces only lay out what these say."""
