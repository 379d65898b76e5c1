"""Package marker: its modules run with `python3 -m` from the repository root (tests/support).
"""
