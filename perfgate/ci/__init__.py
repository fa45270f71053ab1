"""CI: workflows and composite actions rendered from perfgate.yaml, path-based selection (R13)."""
