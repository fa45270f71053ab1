"""A small GitHub REST client: retries, pagination and errors that say what to do.

The base URL comes from ``GITHUB_API_URL`` (through ``RunContext.api_url``), so
pointing it at another server (GitHub Enterprise, a test server) just works. The
token is sent only to that server and never appears in output, errors or reprs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urljoin, urlsplit

import requests

from perfgate import __version__
from perfgate.errors import ExitCode, PerfgateError
from perfgate.util import jsonfile
from perfgate.util.redact import redact

RETRYABLE_STATUSES = frozenset({500, 502, 503, 504})
# Read timeouts are generous: the API can be slow under load, and a retry costs more.
TIMEOUT_S = (10.0, 60.0)
API_VERSION = "2022-11-28"
# A listing perfgate reads (a pull request's comments, a workflow's runs) fits in far
# fewer pages of 100; a server whose paging never ends is given up on, not followed.
MAX_PAGES = 200


class GitHubError(PerfgateError):
    """The GitHub API refused or failed a request; the message says what to do next."""

    exit_code = ExitCode.MALFUNCTION

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class GitHubPermissionError(GitHubError):
    """403: the token may read but not write (fork pull requests, missing job permissions)."""


@dataclass(frozen=True, kw_only=True)
class ApiRetryPolicy:
    """How often, and how long, a GitHub API request is retried on 5xx and rate limits."""

    attempts: int = 5
    backoff_s: float = 1.0
    max_backoff_s: float = 30.0
    # Retry-After beyond this means the limit will not lift within a CI job's patience.
    max_wait_s: float = 300.0
    # A rate limit without a hint: GitHub says wait at least a minute, then back off
    # exponentially, and give up after a number of retries.
    secondary_wait_s: float = 60.0
    rate_limit_retries: int = 4
    # All rate-limit waits of one request together stay within this.
    deadline_s: float = 900.0


def _retry_after(response: requests.Response) -> float | None:
    """Seconds to wait when GitHub says so: Retry-After, or the rate-limit reset time."""
    header = response.headers.get("Retry-After")
    if header is not None:
        try:
            return max(0.0, float(header))
        except ValueError:
            return None
    if response.headers.get("x-ratelimit-remaining") == "0":
        reset = response.headers.get("x-ratelimit-reset")
        if reset is not None and reset.isascii() and reset.isdigit():
            return max(0.0, float(reset) - time.time())
        return 60.0
    return None


def _is_rate_limited(response: requests.Response) -> bool:
    """A rate limit, primary or secondary, as GitHub documents them.

    429 always is one. A 403 is one when it carries a wait hint (Retry-After, or no
    requests remaining) or says so in its message; any other 403 is a permission error.
    """
    if response.status_code == 429:
        return True
    return response.status_code == 403 and (
        "Retry-After" in response.headers
        or response.headers.get("x-ratelimit-remaining") == "0"
        or "rate limit" in _api_message(response).lower()
    )


def _host(url: str) -> str:
    """``host[:port]`` of ``url``, never its ``user:password@`` part."""
    return urlsplit(url).netloc.rpartition("@")[2]


def _api_message(response: requests.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.reason or ""
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return str(body["message"])
    return response.reason or ""


@dataclass(kw_only=True)
class GitHubClient:
    """REST calls for one repository, authenticated with a token that is never shown."""

    api_url: str
    repository: str
    token: str = field(repr=False)
    retry: ApiRetryPolicy = field(default_factory=ApiRetryPolicy)
    # Injectable, so tests wait out rate limits without waiting minutes.
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic
    session: requests.Session = field(default_factory=requests.Session, repr=False)

    def __post_init__(self) -> None:
        self.api_url = self.api_url.rstrip("/") + "/"
        # A token read from a file often ends in a newline; requests would echo it in an error.
        self.token = self.token.strip()
        self.session.headers.update(
            {
                "Accept": "application/vnd.github+json",
                "X-GitHub-Api-Version": API_VERSION,
                "User-Agent": f"perfgate/{__version__}",
            }
        )

    # -- plumbing ---------------------------------------------------------------------------

    def _url(self, path: str) -> str:
        return urljoin(self.api_url, path.lstrip("/"))

    def _same_origin(self, url: str) -> bool:
        """The token goes only to the configured API server (pagination links included)."""
        ours, theirs = urlsplit(self.api_url), urlsplit(url)
        return (ours.scheme, _host(self.api_url)) == (theirs.scheme, _host(url))

    def _redact(self, text: str) -> str:
        return text.replace(self.token, "***") if self.token else text

    def _send(
        self, method: str, url: str, *, body: Mapping[str, Any] | None = None
    ) -> requests.Response:
        """One request with retries on 5xx, connection errors and rate limits."""
        if not self._same_origin(url):
            raise GitHubError(
                f"refusing to send the token to {_host(url)}: it is not the API server "
                f"{_host(self.api_url)} (GITHUB_API_URL)"
            )
        label = f"{method} {urlsplit(url).path}"
        # Failed attempts (5xx, no connection) count against ``attempts``; rate limits are
        # waited out within their own budget.
        started, failures, limited = self.clock(), 0, 0
        while True:
            last = failures + 1 >= self.retry.attempts
            try:
                response = self.session.request(
                    method,
                    url,
                    json=body,
                    headers={"Authorization": f"Bearer {self.token}"},
                    timeout=TIMEOUT_S,
                )
            except (requests.ConnectionError, requests.Timeout) as exc:
                if last:
                    raise GitHubError(
                        f"{label}: cannot reach {_host(self.api_url)} after "
                        f"{failures + 1} attempts ({type(exc).__name__}); check GITHUB_API_URL "
                        "and the runner's network"
                    ) from None
                self.sleep(min(self.retry.backoff_s * 2**failures, self.retry.max_backoff_s))
                failures += 1
                continue
            except requests.RequestException as exc:
                # Never the exception's text: it can quote request headers.
                raise GitHubError(f"{label}: the request failed ({type(exc).__name__})") from None
            if _is_rate_limited(response):
                hinted = _retry_after(response)
                # Without a hint: at least a minute, doubling with each further limit.
                wait = hinted if hinted is not None else self.retry.secondary_wait_s * 2**limited
                limited += 1
                waited = self.clock() - started
                if (
                    limited > self.retry.rate_limit_retries
                    or wait > self.retry.max_wait_s
                    or waited + wait > self.retry.deadline_s
                ):
                    raise GitHubError(
                        f"{label}: rate limited by GitHub ({response.status_code}, "
                        f"{self._redact(_api_message(response))}), still after waiting "
                        f"{waited:.0f}s; wait {wait:.0f}s and re-run the job",
                        status=response.status_code,
                    )
                self.sleep(wait)
                continue
            if response.status_code in RETRYABLE_STATUSES and not last:
                self.sleep(min(self.retry.backoff_s * 2**failures, self.retry.max_backoff_s))
                failures += 1
                continue
            if response.status_code >= 400:
                raise self._error(label, response)
            return response

    def _error(self, label: str, response: requests.Response) -> GitHubError:
        status = response.status_code
        message = self._redact(_api_message(response))
        if status == 401:
            return GitHubError(
                f"{label}: GitHub rejected the token (401 {message}); set GITHUB_TOKEN to a "
                "valid token (in a workflow: env: GITHUB_TOKEN: ${{ github.token }})",
                status=status,
            )
        if status == 403:
            return GitHubPermissionError(
                f"{label}: the token may not do this (403 {message}); give the job "
                "`statuses: write` and `pull-requests: write`. Fork pull requests always get a "
                "read-only token: their verdict is posted by the workflow_run consumer",
                status=status,
            )
        if status == 404:
            return GitHubError(
                f"{label}: not found (404 {message}); check GITHUB_REPOSITORY ({self.repository}),"
                " the pull request number and commit, and that the token can see the repository",
                status=status,
            )
        if status == 422:
            return GitHubError(
                f"{label}: GitHub refused the request (422 {message})", status=status
            )
        return GitHubError(
            f"{label}: GitHub answered {status} {message}; retry later", status=status
        )

    def _json(self, label: str, response: requests.Response) -> Any:
        """The decoded body; a body that is not JSON is a clean error, never a traceback."""
        try:
            return jsonfile.loads(response.content.decode("utf-8"))
        except (UnicodeDecodeError, jsonfile.JsonError) as exc:
            raise GitHubError(
                f"{label}: GitHub answered {response.status_code} with a body that is not JSON "
                f"({exc}); check that GITHUB_API_URL ({redact(self.api_url)}) is the REST API",
                status=response.status_code,
            ) from None

    def request(self, method: str, path: str, body: Mapping[str, Any] | None = None) -> Any:
        """One API call; returns the decoded JSON body (None for 204)."""
        url = self._url(path)
        response = self._send(method, url, body=body)
        if response.status_code == 204 or not response.content:
            return None
        return self._json(f"{method} {urlsplit(url).path}", response)

    def paginate(self, path: str, per_page: int = 100) -> Iterator[dict[str, Any]]:
        """Every item of a list endpoint, following the Link header's ``next``."""
        separator = "&" if "?" in path else "?"
        url: str | None = self._url(f"{path}{separator}per_page={per_page}")
        label = f"GET {urlsplit(url or '').path}"
        seen: set[str] = set()
        while url is not None:
            if url in seen:
                raise GitHubError(
                    f"{label}: the API's pagination links back to a page already read "
                    f"({redact(url)}); giving up rather than reading it for ever"
                )
            if len(seen) == MAX_PAGES:
                raise GitHubError(
                    f"{label}: more than {MAX_PAGES} pages; giving up (a listing perfgate "
                    "reads is far shorter: check GITHUB_API_URL and the repository)"
                )
            seen.add(url)
            response = self._send("GET", url)
            page = self._json(f"GET {urlsplit(url).path}", response)
            if not isinstance(page, list):
                raise GitHubError(
                    f"GET {urlsplit(url).path}: expected a list, got {type(page).__name__}"
                )
            yield from page
            url = response.links.get("next", {}).get("url")

    # -- endpoints --------------------------------------------------------------------------

    def _repo(self, suffix: str) -> str:
        return f"repos/{self.repository}/{suffix}"

    def create_status(
        self, sha: str, *, state: str, context: str, description: str, target_url: str | None
    ) -> None:
        """POST a commit status."""
        body: dict[str, Any] = {"state": state, "context": context, "description": description}
        if target_url:
            body["target_url"] = target_url
        self.request("POST", self._repo(f"statuses/{sha}"), body)

    def viewer_login(self) -> str | None:
        """Who this token writes as, when GitHub says (a person's token); else None.

        Installation tokens (the Actions bot's) may not read ``/user``.
        """
        try:
            user = self.request("GET", "/user")
        except GitHubError:
            return None
        login = user.get("login") if isinstance(user, Mapping) else None
        return login if isinstance(login, str) else None

    def issue_comments(self, number: int) -> list[dict[str, Any]]:
        """Every comment of an issue or pull request, oldest first."""
        return list(self.paginate(self._repo(f"issues/{number}/comments")))

    def create_comment(self, number: int, body: str) -> dict[str, Any]:
        """Create an issue comment; returns it."""
        created: dict[str, Any] = self.request(
            "POST", self._repo(f"issues/{number}/comments"), {"body": body}
        )
        return created

    def update_comment(self, comment_id: int, body: str) -> None:
        """Replace an issue comment's body."""
        self.request("PATCH", self._repo(f"issues/comments/{comment_id}"), {"body": body})

    def delete_comment(self, comment_id: int) -> None:
        """Delete an issue comment; one already gone is fine (a racing run removed it)."""
        try:
            self.request("DELETE", self._repo(f"issues/comments/{comment_id}"))
        except GitHubError as exc:
            if exc.status != 404:
                raise

    def pull_request(self, number: int) -> dict[str, Any]:
        """GET one pull request."""
        pull: dict[str, Any] = self.request("GET", self._repo(f"pulls/{number}"))
        return pull

    def workflow_run(self, run_id: str) -> dict[str, Any]:
        """GET one workflow run (its event, branch, commit, workflow path and repository)."""
        return self._object(self._repo(f"actions/runs/{run_id}"))

    def failed_push_runs(self, workflow_id: int, per_page: int = 50) -> list[dict[str, Any]]:
        """The newest failed push runs of a workflow (one page: the newest ``per_page``)."""
        found = self._object(
            self._repo(f"actions/workflows/{workflow_id}/runs")
            + f"?event=push&status=failure&per_page={per_page}"
        )
        runs = found.get("workflow_runs")
        return [run for run in runs if isinstance(run, dict)] if isinstance(runs, list) else []

    def run_artifacts(self, run_id: int, name: str) -> list[dict[str, Any]]:
        """A workflow run's artifacts called ``name`` (one page: a run has few)."""
        found = self._object(self._repo(f"actions/runs/{run_id}/artifacts") + f"?name={name}")
        listed = found.get("artifacts")
        return [a for a in listed if isinstance(a, dict)] if isinstance(listed, list) else []

    def download_artifact(self, artifact_id: int, max_bytes: int) -> bytes:
        """An artifact's zip archive (GitHub answers with a redirect to its storage, which
        gets no token: requests drops the header on a redirect to another host)."""
        label = f"GET {self._repo(f'actions/artifacts/{artifact_id}/zip')}"
        response = self._send("GET", self._url(self._repo(f"actions/artifacts/{artifact_id}/zip")))
        if len(response.content) > max_bytes:
            raise GitHubError(f"{label}: {len(response.content)} bytes, over {max_bytes}")
        return response.content

    def _object(self, path: str) -> dict[str, Any]:
        """One GET whose answer must be a JSON object."""
        found = self.request("GET", path)
        if not isinstance(found, dict):
            raise GitHubError(f"GET {path}: expected an object, got {type(found).__name__}")
        return found

    def issues(self, label: str, state: str = "all") -> list[dict[str, Any]]:
        """Every issue carrying ``label`` (pull requests left out), oldest first."""
        found = self.paginate(
            self._repo(f"issues?labels={quote(label)}&state={state}&sort=created&direction=asc")
        )
        return [issue for issue in found if "pull_request" not in issue]

    def issue(self, number: int) -> dict[str, Any]:
        """GET one issue."""
        found: dict[str, Any] = self.request("GET", self._repo(f"issues/{number}"))
        return found

    def create_issue(self, title: str, body: str, labels: list[str]) -> dict[str, Any]:
        """Open an issue; returns it."""
        created: dict[str, Any] = self.request(
            "POST", self._repo("issues"), {"title": title, "body": body, "labels": labels}
        )
        return created

    def update_issue(self, number: int, **fields: Any) -> None:
        """PATCH an issue: its ``body``, ``state`` ("open" or "closed"), ``state_reason``."""
        self.request("PATCH", self._repo(f"issues/{number}"), fields)

    def ensure_label(self, name: str, color: str, description: str) -> None:
        """Create the label unless the repository has it (another run may create it first)."""
        try:
            self.request("GET", self._repo(f"labels/{quote(name)}"))
            return
        except GitHubError as exc:
            if exc.status != 404:
                raise
        try:
            self.request(
                "POST",
                self._repo("labels"),
                {"name": name, "color": color, "description": description},
            )
        except GitHubError as exc:
            if exc.status != 422:  # already exists: a racing run made it
                raise

    def commit_pulls(self, sha: str) -> list[dict[str, Any]]:
        """The pull requests associated with a commit (the one merged as it, for a push)."""
        return list(self.paginate(self._repo(f"commits/{sha}/pulls")))

    def dispatch_workflow(self, workflow: str, ref: str, inputs: Mapping[str, str]) -> None:
        """Start a ``workflow_dispatch`` run of ``workflow`` (its file name) on ``ref``."""
        self.request(
            "POST",
            self._repo(f"actions/workflows/{quote(workflow)}/dispatches"),
            {"ref": ref, "inputs": dict(inputs)},
        )
