"""Run: one bucket -> driver -> execution -> one Result artifact (docs/design.md R3, R10, R11)."""
