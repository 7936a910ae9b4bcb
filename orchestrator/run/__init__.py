"""Running threads: the runner (the loop), the session (a thread's life), batch, options."""
