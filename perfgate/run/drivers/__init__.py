"""Benchmark drivers, looked up by the name a bucket declares."""

from __future__ import annotations

from perfgate.errors import ConfigError
from perfgate.run.drivers.base import Driver
from perfgate.run.drivers.command import CommandDriver
from perfgate.run.drivers.demo import DemoDriver
from perfgate.run.drivers.isaaclab import IsaacLabDriver

_DRIVERS: dict[str, Driver] = {
    "demo": DemoDriver(),
    "command": CommandDriver(),
    "isaaclab": IsaacLabDriver(),
}


def get_driver(name: str) -> Driver:
    """The driver registered under ``name``."""
    try:
        return _DRIVERS[name]
    except KeyError:
        raise ConfigError(
            f"driver {name!r} is not available; available: {', '.join(sorted(_DRIVERS))}"
        ) from None
