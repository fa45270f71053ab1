"""Report: every surface a GateReport renders (summary.md, verdict.json, JUnit, terminal)."""
