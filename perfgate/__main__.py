"""Entry point for ``python -m perfgate``."""

from __future__ import annotations

from perfgate.cli import main

raise SystemExit(main())
