"""Package marker: run its modules with `python3 -m` from the repository root (see tests/support)."""
