"""Remotes that stall or ask for credentials, served on 127.0.0.1, and a guard on hangs.

``silent_server`` accepts connections and never answers, as a stalled git server or
registry does; ``asking_server`` answers every request with 401 and a Basic challenge, as
a remote needing credentials does. ``ends_within`` runs a call that must not hang, and
fails the test instead of hanging with it.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

import pytest

T = TypeVar("T")


@contextmanager
def silent_server() -> Iterator[str]:
    """The URL of a git remote on 127.0.0.1 that accepts connections and never answers."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            with contextlib.suppress(TimeoutError, OSError):
                held.append(listener.accept()[0])  # kept open, never read nor written

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/origin.git"
    finally:
        stop.set()
        thread.join()
        for connection in [*held, listener]:
            connection.close()


class _Challenge(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Basic realm="baselines"')
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        """Nothing: each request would print a line into the test's output."""


@contextmanager
def asking_server() -> Iterator[str]:
    """The URL of a git remote on 127.0.0.1 that asks for credentials (401) on every request."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Challenge)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/origin.git"
    finally:
        server.shutdown()
        server.server_close()


def ends_within(seconds: float, call: Callable[[], T]) -> T:
    """``call()``'s result (or its exception), failing the test if it runs past ``seconds``.

    A guard against a hang, not a measure of speed: the call itself is left running.
    """
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append((True, call()))
        except BaseException as exc:  # handed to the test's thread
            outcome.append((False, exc))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if not outcome:
        pytest.fail(f"still waiting after {seconds:g} s: the call hangs")
    finished, value = outcome[0]
    if not finished:
        raise value
    return value  # type: ignore[no-any-return]
