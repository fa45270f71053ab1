"""Invoke tasks for maintainers: rendering workflows and composite actions from templates."""

from __future__ import annotations
