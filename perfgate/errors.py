"""One exception hierarchy; each class carries the exit code it maps to (docs/design.md R8)."""

from __future__ import annotations

from enum import IntEnum

from perfgate.util.redact import redact


class ExitCode(IntEnum):
    """Process exit codes: they answer "did the gate run?"."""

    OK = 0
    BLOCK = 1
    HARD_FAILURE = 2
    MALFUNCTION = 3
    USAGE = 4


class PerfgateError(Exception):
    """Base class: a failure perfgate can explain; only ``cli.main`` turns it into an exit."""

    exit_code: ExitCode = ExitCode.MALFUNCTION


class ConfigError(PerfgateError):
    """perfgate.yaml (or another input file) is malformed; the message names file and key path."""

    exit_code = ExitCode.USAGE


class UsageError(PerfgateError):
    """The command line asks for something impossible (unknown bucket, bad flag value)."""

    exit_code = ExitCode.USAGE


class GateMalfunction(PerfgateError):
    """The gate itself could not run: no artifacts, unreadable baseline, failed publish."""

    exit_code = ExitCode.MALFUNCTION


class GitError(GateMalfunction):
    """A git command failed; carries the command and its stderr."""

    def __init__(
        self, args: list[str], returncode: int, stderr: str, *, summary: str | None = None
    ) -> None:
        self.args_list = args
        self.returncode = returncode
        self.stderr = stderr
        detail = stderr.strip().splitlines()[-1] if stderr.strip() else "no output"
        super().__init__(
            redact(summary or f"git {' '.join(args)} failed (exit {returncode}): {detail}")
        )


class Stalled(GateMalfunction):
    """A remote (a git server, an image registry) did not answer within its time limit."""


class GitTimeout(GitError, Stalled):
    """A git command that talks to a remote ran out of time and was killed."""

    def __init__(self, args: list[str], seconds: float) -> None:
        self.seconds = seconds
        # "timed out" in git's own words, so the push loop retries it as a network failure.
        said = f"fatal: timed out after {seconds:g} s waiting for the remote"
        super().__init__(
            args,
            -1,
            said + "\n",
            summary=f"git {' '.join(args)} timed out after {seconds:g} s (the remote or the "
            "network stalled): check that the remote answers from here, then run again",
        )


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP (a cancelled CI job, a closed terminal): unwind like Ctrl-C.

    A KeyboardInterrupt, so every cleanup that survives Ctrl-C (benchmark process groups,
    seed worktrees, temporary trees) also survives a cancellation.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        """The shell's convention for death by a signal: 128 + its number."""
        return 128 + self.signum


class EraConflict(UsageError):
    """An image era is already recorded with another image: manifest entries are immutable."""


class ImageStepFailed(GateMalfunction):
    """A login, build, tag or push command of an era roll failed; nothing was recorded."""
