"""The vocabulary each driver accepts: its name and its physics and render backend keys.

Kept apart from the driver implementations so that config validation can check a
bucket's backends without importing numpy or any benchmark code.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class DriverVocabulary:
    """Backend names a driver understands; ``None`` means any identifier is accepted."""

    physics: frozenset[str] | None
    render: frozenset[str] | None
    # Task names the driver can run; ``None`` when any task name is the user's to choose.
    tasks: frozenset[str] | None = None


VOCABULARIES: dict[str, DriverVocabulary] = {
    "demo": DriverVocabulary(
        physics=frozenset({"numpy", "python"}),
        render=frozenset(),
        tasks=frozenset({"cartpole", "pendulum"}),
    ),
    # The command driver runs the user's own program, so backend labels are the user's.
    "command": DriverVocabulary(physics=None, render=None),
    "isaaclab": DriverVocabulary(
        physics=frozenset({"physx", "newton"}),
        render=frozenset({"rtx_renderer", "newton_renderer", "ovrtx_renderer", "warp_renderer"}),
    ),
}
