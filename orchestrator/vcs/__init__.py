"""Git for threads: hardened git commands (`git_safe`) and a thread's worktree and branch (`worktrees`)."""
