"""Seeding: replay historical commits to fill baselines (dry run by default; R9).

``prepare`` turns what a seed is asked to do into a plan, which ``plan`` builds (what to
run, what is stored); ``replay`` runs it in throwaway worktrees through the normal bench
path, ``records`` says what became of every planned sample.
"""
