"""A local stand-in for the GitHub REST API, served over real HTTP on 127.0.0.1.

The real GitHub service cannot be reached from here, so this server implements the
endpoints perfgate uses, with GitHub's documented shapes: commit statuses, issue
comments (list with per_page/page and Link headers, create, update, delete), one pull
request, workflow runs with their artifacts (get a run; list a workflow's runs by
event and status; list a run's artifacts by name; download one, answered as GitHub does
with a redirect to its storage), issues (list by label and state, create, get, update),
labels (get, create), the pull requests of a commit, and workflow dispatch. It records
every request and can inject GitHub's failure modes: a read-only token (403), a bad token
(401), a 5xx, a secondary rate limit.
"""

from __future__ import annotations

import io
import json
import re
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

WRITE_TOKEN = "ghs_writeTOKEN0123456789abcdef"
READ_TOKEN = "ghs_readonlyTOKEN0123456789abcdef"
BOT = {"login": "github-actions[bot]", "type": "Bot"}
HUMAN = {"login": "mallory", "type": "User"}


@dataclass(frozen=True)
class Recorded:
    """One request as the server saw it."""

    method: str
    path: str
    query: dict[str, list[str]]
    body: Any
    authorization: str | None


@dataclass
class Fault:
    """Answer the next ``times`` matching requests with ``status``, ``headers`` and ``body``."""

    method: str
    path_pattern: str
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: dict[str, Any] = field(default_factory=dict)
    times: int = 1
    # Sent as is instead of ``body``: a broken proxy's HTML, a truncated answer.
    raw: bytes | None = None


@dataclass
class FakeGitHub:
    """Server state; every field is guarded by ``lock``."""

    repository: str = "acme/sim"
    max_per_page: int = 100
    tokens: dict[str, str] = field(
        default_factory=lambda: {WRITE_TOKEN: "write", READ_TOKEN: "read"}
    )
    statuses: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    comments: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    pulls: dict[int, str] = field(default_factory=dict)
    faults: list[Fault] = field(default_factory=list)
    requests: list[Recorded] = field(default_factory=list)
    foreign_next_link: str | None = None
    # Comment listings answer with a Link whose "next" is the page just served, this many
    # times: a server (or proxy) whose paging never ends.
    looping_pages: int = 0
    # Holds the first comment listings until this many arrive: forces two runs to race.
    list_barrier: threading.Barrier | None = None
    held_lists: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    next_id: int = 1000
    # Who the token posts as: the Actions bot, or a person with a personal access token.
    poster: dict[str, str] = field(default_factory=lambda: dict(BOT))
    clock: int = 0
    base_url: str = ""
    # Workflow runs by id, as GET /actions/runs/{id} answers; artifacts by id, with the run
    # they belong to and their zip archive.
    runs: dict[int, dict[str, Any]] = field(default_factory=dict)
    artifacts: dict[int, dict[str, Any]] = field(default_factory=dict)
    issues: dict[int, dict[str, Any]] = field(default_factory=dict)
    labels: dict[str, dict[str, Any]] = field(default_factory=dict)
    # The pull requests GitHub associates with a commit (GET commits/{sha}/pulls).
    commit_pulls: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # Workflows that exist (by file name), and every workflow_dispatch accepted.
    workflows: set[str] = field(default_factory=lambda: {"perfgate-bisect.yml"})
    dispatches: list[dict[str, Any]] = field(default_factory=list)
    next_issue: int = 1
    # Opened (as the poster) just before the next issue a client creates: another run
    # that raced it and won.
    racing_issues: list[dict[str, Any]] = field(default_factory=list)

    def add_run(self, run_id: int, **fields: Any) -> dict[str, Any]:
        """A workflow run of this repository: a failed push of ``.github/workflows/perfgate.yml``
        on main unless ``fields`` say otherwise (repository objects as GitHub nests them)."""
        run = {
            "id": run_id,
            "name": "perfgate",
            "event": "push",
            "status": "completed",
            "conclusion": "failure",
            "head_branch": "main",
            "head_sha": "0" * 40,
            "path": ".github/workflows/perfgate.yml",
            "workflow_id": 161335,
            "run_attempt": 1,
            "repository": {"full_name": self.repository},
            "head_repository": {"full_name": self.repository},
            **fields,
        }
        with self.lock:
            self.runs[run_id] = run
        return run

    def add_artifact(self, run_id: int, name: str, files: dict[str, str]) -> int:
        """Upload an artifact to a run: its files, zipped as GitHub serves them."""
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            for member, text in files.items():
                archive.writestr(member, text)
        with self.lock:
            artifact_id = 9000 + len(self.artifacts)
            self.artifacts[artifact_id] = {
                "run_id": run_id, "name": name, "data": buffer.getvalue(), "expired": False
            }  # fmt: skip
        return artifact_id

    def add_comment(self, issue: int, body: str, user: dict[str, str] = BOT) -> dict[str, Any]:
        """Seed (or create) a comment, as GitHub would store it."""
        with self.lock:
            return self._add_comment(issue, body, user)

    def _add_comment(self, issue: int, body: str, user: dict[str, str]) -> dict[str, Any]:
        self.next_id += 1
        self.clock += 1
        comment = {
            "id": self.next_id,
            "body": body,
            "user": dict(user),
            "created_at": f"2026-11-30T08:{self.clock // 60:02d}:{self.clock % 60:02d}Z",
            "updated_at": f"2026-11-30T08:{self.clock // 60:02d}:{self.clock % 60:02d}Z",
        }
        self.comments.setdefault(issue, []).append(comment)
        return comment

    def open_issue(
        self, title: str, body: str, labels: list[str], user: dict[str, str] = HUMAN
    ) -> dict[str, Any]:
        """Seed an issue, as someone opened it."""
        with self.lock:
            return self._open_issue(title, body, labels, user)

    def _open_issue(
        self, title: str, body: str, labels: list[str], user: dict[str, str]
    ) -> dict[str, Any]:
        number = self.next_issue
        self.next_issue += 1
        self.clock += 1
        for name in labels:
            self.labels.setdefault(name, {"name": name, "color": "ededed", "description": ""})
        issue = {
            "number": number,
            "title": title,
            "body": body,
            "state": "open",
            "state_reason": None,
            "labels": [{"name": name} for name in labels],
            "user": dict(user),
            "created_at": f"2026-11-30T09:{self.clock // 60:02d}:{self.clock % 60:02d}Z",
        }
        self.issues[number] = issue
        return issue

    def add_label(self, number: int, name: str) -> None:
        """A maintainer puts ``name`` on issue ``number``."""
        with self.lock:
            labels = self.issues[number]["labels"]
            if all(label["name"] != name for label in labels):
                labels.append({"name": name})

    def issues_labelled(self, name: str) -> list[dict[str, Any]]:
        """Every issue carrying label ``name``, oldest first (copies)."""
        with self.lock:
            return [
                json.loads(json.dumps(issue))
                for issue in self.issues.values()
                if any(label["name"] == name for label in issue["labels"])
            ]

    def marker_comments(self, issue: int, marker: str) -> list[dict[str, Any]]:
        """Comments on ``issue`` whose body starts with ``marker``."""
        with self.lock:
            return [c for c in self.comments.get(issue, []) if c["body"].startswith(marker)]

    def calls(self, method: str | None = None) -> list[tuple[str, str]]:
        """(method, path) of every request so far, optionally of one method."""
        with self.lock:
            return [(r.method, r.path) for r in self.requests if method in (None, r.method)]


def _route(state: FakeGitHub, handler: _Handler, method: str) -> None:
    url = urlsplit(handler.path)
    query = parse_qs(url.query)
    length = int(handler.headers.get("Content-Length") or 0)
    raw = handler.rfile.read(length) if length else b""
    body = json.loads(raw) if raw else None
    auth = handler.headers.get("Authorization")
    with state.lock:
        state.requests.append(Recorded(method, url.path, query, body, auth))
    if match := re.fullmatch(r"/storage/(\d+)\.zip", url.path):
        # Artifact storage: a signed URL, no token needed (GitHub's redirect target).
        with state.lock:
            artifact = state.artifacts.get(int(match.group(1)))
        if artifact is None:
            handler.reply(404, {"message": "Not Found"})
        else:
            handler.reply_raw(200, artifact["data"], {"Content-Type": "application/zip"})
        return
    with state.lock:
        for fault in state.faults:
            if (
                fault.times > 0
                and fault.method == method
                and re.fullmatch(fault.path_pattern, url.path)
            ):
                fault.times -= 1
                if fault.raw is not None:
                    handler.reply_raw(fault.status, fault.raw, fault.headers)
                else:
                    handler.reply(fault.status, fault.body, fault.headers)
                return
    token = (auth or "").removeprefix("Bearer ")
    access = state.tokens.get(token)
    if access is None:
        handler.reply(401, {"message": "Bad credentials"})
        return
    if method != "GET" and access != "write":
        handler.reply(403, {"message": "Resource not accessible by integration"})
        return
    if url.path == "/user" and method == "GET":
        # GitHub answers /user for a person's token; an installation token (the Actions
        # bot's) gets 403.
        with state.lock:
            poster = dict(state.poster)
        if poster.get("type") == "User":
            handler.reply(200, poster)
        else:
            handler.reply(403, {"message": "Resource not accessible by integration"})
        return
    prefix = f"/repos/{state.repository}/"
    if not url.path.startswith(prefix):
        handler.reply(404, {"message": "Not Found"})
        return
    rest = url.path[len(prefix) :]
    if match := re.fullmatch(r"statuses/([0-9a-f]{40})", rest):
        _post_status(state, handler, method, match.group(1), body)
    elif match := re.fullmatch(r"issues/(\d+)/comments", rest):
        _issue_comments(state, handler, method, int(match.group(1)), query, body)
    elif match := re.fullmatch(r"issues/comments/(\d+)", rest):
        _one_comment(state, handler, method, int(match.group(1)), body)
    elif method == "GET" and (match := re.fullmatch(r"actions/\w+/(\d+)(/\w+)?(/zip)?", rest)):
        _actions(state, handler, rest, query)
    elif rest == "issues":
        _issues(state, handler, method, query, body)
    elif match := re.fullmatch(r"issues/(\d+)", rest):
        _one_issue(state, handler, method, int(match.group(1)), body)
    elif rest == "labels" or re.fullmatch(r"labels/[^/]+", rest):
        _labels(state, handler, method, unquote(rest.removeprefix("labels").lstrip("/")), body)
    elif (match := re.fullmatch(r"commits/([0-9a-f]{40})/pulls", rest)) and method == "GET":
        with state.lock:
            pulls = [dict(p) for p in state.commit_pulls.get(match.group(1), [])]
        handler.reply(200, pulls)
    elif (
        match := re.fullmatch(r"actions/workflows/([^/]+)/dispatches", rest)
    ) and method == "POST":
        _dispatch(state, handler, unquote(match.group(1)), body)
    elif (match := re.fullmatch(r"pulls/(\d+)", rest)) and method == "GET":
        with state.lock:
            head = state.pulls.get(int(match.group(1)))
        if head is None:
            handler.reply(404, {"message": "Not Found"})
        else:
            handler.reply(200, {"number": int(match.group(1)), "head": {"sha": head}})
    else:
        handler.reply(404, {"message": "Not Found"})


def _actions(state: FakeGitHub, handler: _Handler, rest: str, query: dict[str, list[str]]) -> None:
    """Workflow runs and their artifacts (GET only), in GitHub's shapes."""
    with state.lock:
        runs = [dict(run) for run in state.runs.values()]
        artifacts = {key: dict(value) for key, value in state.artifacts.items()}
    if match := re.fullmatch(r"actions/runs/(\d+)", rest):
        found = [run for run in runs if run["id"] == int(match.group(1))]
        if found:
            handler.reply(200, found[0])
        else:
            handler.reply(404, {"message": "Not Found"})
    elif match := re.fullmatch(r"actions/workflows/(\d+)/runs", rest):
        wanted = [
            run
            for run in runs
            if run["workflow_id"] == int(match.group(1))
            and query.get("event", [run["event"]])[0] == run["event"]
            and query.get("status", [run["conclusion"]])[0] in (run["conclusion"], run["status"])
        ]
        newest = sorted(wanted, key=lambda run: -run["id"])
        page = newest[: int(query.get("per_page", ["30"])[0])]
        handler.reply(200, {"total_count": len(wanted), "workflow_runs": page})
    elif match := re.fullmatch(r"actions/runs/(\d+)/artifacts", rest):
        run_id = int(match.group(1))
        listed = [
            {
                "id": artifact_id,
                "name": artifact["name"],
                "size_in_bytes": len(artifact["data"]),
                "expired": artifact["expired"],
                "archive_download_url": f"{state.base_url}/repos/{state.repository}/actions/"
                f"artifacts/{artifact_id}/zip",
                "workflow_run": {"id": run_id},
            }
            for artifact_id, artifact in sorted(artifacts.items())
            if artifact["run_id"] == run_id
            and query.get("name", [artifact["name"]])[0] == artifact["name"]
        ]
        handler.reply(200, {"total_count": len(listed), "artifacts": listed})
    elif (match := re.fullmatch(r"actions/artifacts/(\d+)/zip", rest)) and int(
        match.group(1)
    ) in artifacts:
        location = f"{state.base_url}/storage/{match.group(1)}.zip"
        handler.reply_raw(302, b"", {"Location": location})
    else:
        handler.reply(404, {"message": "Not Found"})


def _post_status(state: FakeGitHub, handler: _Handler, method: str, sha: str, body: Any) -> None:
    if method != "POST":
        handler.reply(404, {"message": "Not Found"})
        return
    if body.get("state") not in ("error", "failure", "pending", "success"):
        handler.reply(422, {"message": "Validation Failed: state"})
        return
    if len(body.get("description", "")) > 140:
        handler.reply(422, {"message": "Validation Failed: description is too long"})
        return
    with state.lock:
        state.statuses.setdefault(sha, []).append(body)
    handler.reply(201, {"id": len(state.statuses[sha]), **body})


def _issue_comments(
    state: FakeGitHub,
    handler: _Handler,
    method: str,
    issue: int,
    query: dict[str, list[str]],
    body: Any,
) -> None:
    if method == "POST":
        with state.lock:
            created = state._add_comment(issue, body["body"], state.poster)
        handler.reply(201, created)
        return
    if method != "GET":
        handler.reply(404, {"message": "Not Found"})
        return
    per_page = min(int(query.get("per_page", ["30"])[0]), state.max_per_page)
    page = int(query.get("page", ["1"])[0])
    with state.lock:
        everything = [dict(c) for c in state.comments.get(issue, [])]
        barrier = state.list_barrier
        hold = barrier is not None and state.held_lists < barrier.parties
        state.held_lists += hold
    if hold and barrier is not None:
        # Both runs have read the comments before either answer leaves: a real race.
        barrier.wait(timeout=30)
    chunk = everything[(page - 1) * per_page : page * per_page]
    headers = {}
    with state.lock:
        looping = state.looping_pages > 0
        state.looping_pages -= looping
    if looping:
        headers["Link"] = f'<{state.base_url}{handler.path}>; rel="next"'
    elif page * per_page < len(everything):
        base = state.foreign_next_link or state.base_url
        path = f"/repos/{state.repository}/issues/{issue}/comments"
        headers["Link"] = (
            f'<{base}{path}?per_page={per_page}&page={page + 1}>; rel="next", '
            f"<{base}{path}?per_page={per_page}&page={-(-len(everything) // per_page)}>; "
            'rel="last"'
        )
    handler.reply(200, chunk, headers)


def _page(
    state: FakeGitHub, items: list[dict[str, Any]], path: str, query: dict[str, list[str]]
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """One page of ``items`` and its Link header, as GitHub paginates lists."""
    per_page = min(int(query.get("per_page", ["30"])[0]), state.max_per_page)
    page = int(query.get("page", ["1"])[0])
    chunk = items[(page - 1) * per_page : page * per_page]
    headers = {}
    if page * per_page < len(items):
        kept = "&".join(f"{k}={v[0]}" for k, v in query.items() if k not in ("page", "per_page"))
        headers["Link"] = (
            f'<{state.base_url}{path}?{kept}&per_page={per_page}&page={page + 1}>; rel="next"'
        )
    return chunk, headers


def _issues(
    state: FakeGitHub,
    handler: _Handler,
    method: str,
    query: dict[str, list[str]],
    body: Any,
) -> None:
    if method == "POST":
        title, text = body.get("title"), body.get("body", "")
        if not isinstance(title, str) or not title or len(title) > 256:
            handler.reply(422, {"message": "Validation Failed: title"})
            return
        if len(text) > 65536:
            handler.reply(422, {"message": "Validation Failed: body is too long"})
            return
        with state.lock:
            for race in state.racing_issues:
                state._open_issue(race["title"], race["body"], race["labels"], state.poster)
            state.racing_issues.clear()
            created = state._open_issue(title, text, list(body.get("labels", [])), state.poster)
        handler.reply(201, created)
        return
    if method != "GET":
        handler.reply(404, {"message": "Not Found"})
        return
    wanted = [n for n in query.get("labels", [""])[0].split(",") if n]
    which = query.get("state", ["open"])[0]
    with state.lock:
        chosen = [
            json.loads(json.dumps(issue))
            for issue in state.issues.values()
            if (which == "all" or issue["state"] == which)
            and all(any(label["name"] == n for label in issue["labels"]) for n in wanted)
        ]
    chunk, headers = _page(state, chosen, f"/repos/{state.repository}/issues", query)
    handler.reply(200, chunk, headers)


def _one_issue(state: FakeGitHub, handler: _Handler, method: str, number: int, body: Any) -> None:
    with state.lock:
        issue = state.issues.get(number)
        if issue is None:
            handler.reply(404, {"message": "Not Found"})
            return
        if method == "GET":
            handler.reply(200, issue)
            return
        if method != "PATCH":
            handler.reply(404, {"message": "Not Found"})
            return
        if body.get("state") not in (None, "open", "closed"):
            handler.reply(422, {"message": "Validation Failed: state"})
            return
        for name in ("title", "body", "state", "state_reason"):
            if name in body:
                issue[name] = body[name]
        if "labels" in body:
            issue["labels"] = [{"name": name} for name in body["labels"]]
        handler.reply(200, issue)


def _labels(state: FakeGitHub, handler: _Handler, method: str, name: str, body: Any) -> None:
    with state.lock:
        if method == "GET" and name:
            label = state.labels.get(name)
            handler.reply(*((200, label) if label else (404, {"message": "Not Found"})))
        elif method == "POST" and not name:
            if body.get("name") in state.labels:
                handler.reply(422, {"message": "Validation Failed: already_exists"})
            else:
                state.labels[body["name"]] = dict(body)
                handler.reply(201, dict(body))
        else:
            handler.reply(404, {"message": "Not Found"})


def _dispatch(state: FakeGitHub, handler: _Handler, workflow: str, body: Any) -> None:
    inputs = body.get("inputs", {})
    with state.lock:
        if workflow not in state.workflows:
            handler.reply(404, {"message": "Not Found"})
            return
        if not isinstance(body.get("ref"), str) or not all(
            isinstance(v, str) for v in inputs.values()
        ):
            handler.reply(422, {"message": "Validation Failed: ref and inputs are strings"})
            return
        state.dispatches.append({"workflow": workflow, "ref": body["ref"], "inputs": inputs})
    handler.reply(204, None)


def _one_comment(
    state: FakeGitHub, handler: _Handler, method: str, comment_id: int, body: Any
) -> None:
    with state.lock:
        for comments in state.comments.values():
            for index, comment in enumerate(comments):
                if comment["id"] != comment_id:
                    continue
                if method == "PATCH":
                    comment["body"] = body["body"]
                    handler.reply(200, comment)
                elif method == "DELETE":
                    del comments[index]
                    handler.reply(204, None)
                else:
                    handler.reply(404, {"message": "Not Found"})
                return
    handler.reply(404, {"message": "Not Found"})


class _Handler(BaseHTTPRequestHandler):
    state: FakeGitHub

    def reply(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        self.reply_raw(status, b"" if body is None else json.dumps(body).encode(), headers)

    def reply_raw(self, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        _route(self.state, self, "GET")

    def do_POST(self) -> None:
        _route(self.state, self, "POST")

    def do_PATCH(self) -> None:
        _route(self.state, self, "PATCH")

    def do_DELETE(self) -> None:
        _route(self.state, self, "DELETE")

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the test asserts
        pass


@contextmanager
def serve(state: FakeGitHub | None = None) -> Iterator[FakeGitHub]:
    """Run the stand-in on 127.0.0.1 in a thread; ``state.base_url`` is GITHUB_API_URL."""
    state = state or FakeGitHub()
    handler = type("Handler", (_Handler,), {"state": state})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    state.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
