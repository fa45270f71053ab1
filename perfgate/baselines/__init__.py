"""Baselines: the store on a git branch, and the trusted writers that fill it (R4, R9)."""
