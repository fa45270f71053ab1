"""Run: one bucket -> driver -> execution -> one Result artifact (DESIGN.md R3, R10, R11)."""
