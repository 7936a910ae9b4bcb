"""Testing helpers: `simulate()` runs the real engine with given replies (FORMAT.md section 10)."""
