"""How threads are shown to people, shared by the command line, the web page and MCP: a thread's story, plurals."""
