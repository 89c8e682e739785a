"""A loopback stand-in for the GitHub REST endpoints profopt publish uses.

It behaves like api.github.com where the client's correctness depends on it:
- token auth: `Authorization: Bearer|token T`; no or unknown token -> 401 "Bad credentials";
- installation tokens (`ghs_…`) get 403 "Resource not accessible by integration" on GET /user and
  their comments are authored by `github-actions[bot]` (type Bot); personal tokens get their login;
- read-only tokens (a fork PR's GITHUB_TOKEN) get 403 on POST/PATCH/DELETE;
- comments listed oldest first, `per_page` (default 30, max 100) / `page`, and a Link header whose
  URLs use the `/repositories/{id}/…` form, as GitHub's do, so a client must follow them verbatim;
- a body over the limit (65,536) -> 422 "Body is too long";
- any user with write access may edit anyone's comment: only the client keeps off others' comments;
- issues: listed by `state` (open · closed · all, default open), oldest first, paged like comments;
  created (number per repository), read, and PATCHed (title, body, state, state_reason);
- faults on demand: a status with headers (5xx, 403/429 with retry-after or
  x-ratelimit-remaining 0 + x-ratelimit-reset), a dropped connection before or after the request
  took effect.
Every request is recorded (method, raw target, headers, body) so tests can check where the token went.
Each request is applied atomically under one lock, as GitHub's own writes are, while handlers run
concurrently in threads.
"""
from __future__ import annotations

import json
import re
import socket
import threading
from dataclasses import dataclass, field
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

BOT_LOGIN = "github-actions[bot]"


@dataclass
class Identity:
    login: str
    user_id: int
    type: str = "User"  # "Bot" for installation tokens
    installation: bool = False
    can_write: bool = True


@dataclass
class Recorded:
    method: str
    target: str  # the raw request target: path and query, as sent
    headers: dict[str, str]
    body: str
    status: int | None = None


@dataclass
class Fault:
    method: str
    path: re.Pattern[str]
    kind: str  # status | drop | drop_after | status_after
    status: int
    headers: dict[str, str]
    body: Any
    times: int


@dataclass
class _State:
    comments: dict[tuple[str, int], list[dict[str, Any]]] = field(default_factory=dict)
    pulls: dict[tuple[str, int], str] = field(default_factory=dict)
    issues: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    repo_ids: dict[str, int] = field(default_factory=dict)
    next_id: int = 1000


class FakeGitHub:
    def __init__(self, *, body_limit: int = 65_536, link_base: str | None = None) -> None:
        self.body_limit = body_limit
        self.link_base = link_base  # override the host put into Link headers
        self.tokens: dict[str, Identity] = {}
        self.requests: list[Recorded] = []
        self.faults: list[Fault] = []
        self.race_barrier: threading.Barrier | None = None  # POSTs meet here before creating
        self._state = _State()
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._next_user = 500

    # ---- setup -------------------------------------------------------------------------------
    def add_token(self, token: str, login: str | None = None, *, can_write: bool = True) -> Identity:
        installation = token.startswith("ghs_")
        self._next_user += 1
        ident = Identity(
            login=BOT_LOGIN if installation else (login or f"user{self._next_user}"),
            user_id=41898282 if installation else self._next_user,
            type="Bot" if installation else "User",
            installation=installation,
            can_write=can_write,
        )
        self.tokens[token] = ident
        return ident

    def set_pull(self, repo: str, number: int, head_sha: str) -> None:
        self._state.pulls[(repo, number)] = head_sha

    def seed_comment(self, repo: str, number: int, body: str, login: str, user_type: str = "User") -> dict:
        with self._lock:
            return self._create(repo, number, body, Identity(login, 7, user_type))

    def comments(self, repo: str, number: int) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(c) for c in self._state.comments.get((repo, number), [])]

    def issues(self, repo: str) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(i) for i in self._state.issues.get(repo, [])]

    def seed_issue(self, repo: str, title: str, body: str, login: str, state: str = "open") -> dict:
        with self._lock:
            issue = self._create_issue(repo, {"title": title, "body": body}, Identity(login, 7))
            issue["state"] = state
            return dict(issue)

    def inject(self, method: str, path: str, kind: str = "status", *, status: int = 500,
               headers: dict[str, str] | None = None, body: Any = None, times: int = 1) -> None:
        """Fail the next `times` requests whose path (no query) fully matches the regex `path`."""
        if body is None:
            body = {"message": "Server Error"}
        self.faults.append(Fault(method.upper(), re.compile(path), kind, status, dict(headers or {}),
                                 body, times))

    def requests_for(self, method: str, path_re: str) -> list[Recorded]:
        return [r for r in self.requests
                if r.method == method and re.fullmatch(path_re, urlsplit(r.target).path)]

    # ---- lifecycle ---------------------------------------------------------------------------
    @property
    def url(self) -> str:
        assert self._httpd is not None
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> str:
        server = self

        class Handler(_Handler):
            fake = server

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,),
                                        daemon=True)
        self._thread.start()
        return self.url

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    # ---- state changes (called with the lock held) ----------------------------------------------
    def _repo_id(self, repo: str) -> int:
        return self._state.repo_ids.setdefault(repo, 9000 + len(self._state.repo_ids))

    def _create(self, repo: str, number: int, body: str, who: Identity) -> dict[str, Any]:
        self._state.next_id += 1
        cid = self._state.next_id
        now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        comment = {
            "id": cid,
            "node_id": f"IC_{cid}",
            "url": f"{self.url}/repos/{repo}/issues/comments/{cid}",
            "html_url": f"https://github.com/{repo}/pull/{number}#issuecomment-{cid}",
            "issue_url": f"{self.url}/repos/{repo}/issues/{number}",
            "body": body,
            "user": {"login": who.login, "id": who.user_id, "type": who.type},
            "created_at": now,
            "updated_at": now,
        }
        self._state.comments.setdefault((repo, number), []).append(comment)
        self._repo_id(repo)
        return comment

    def _create_issue(self, repo: str, fields: dict[str, Any], who: Identity) -> dict[str, Any]:
        items = self._state.issues.setdefault(repo, [])
        number = max([i["number"] for i in items] + [n for (r, n) in self._state.pulls if r == repo] + [0]) + 1
        now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        issue = {"id": 70000 + len(items), "number": number, "title": fields["title"], "body": fields.get("body") or "",
                 "state": "open", "state_reason": None, "labels": [{"name": n} for n in fields.get("labels") or []],
                 "user": {"login": who.login, "id": who.user_id, "type": who.type},
                 "html_url": f"https://github.com/{repo}/issues/{number}", "created_at": now, "updated_at": now}
        items.append(issue)
        self._repo_id(repo)
        return issue

    def _find(self, repo: str, cid: int) -> tuple[list[dict[str, Any]], dict[str, Any]] | None:
        for (r, _n), items in self._state.comments.items():
            if r != repo:
                continue
            for c in items:
                if c["id"] == cid:
                    return items, c
        return None

    def _repo_from_id(self, rid: int) -> str | None:
        for name, i in self._state.repo_ids.items():
            if i == rid:
                return name
        return None


class _Handler(BaseHTTPRequestHandler):
    fake: FakeGitHub
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        pass

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PATCH(self) -> None:
        self._handle("PATCH")

    def do_DELETE(self) -> None:
        self._handle("DELETE")

    # ---- plumbing ----------------------------------------------------------------------------
    def _handle(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length).decode("utf-8", "replace") if length else ""
        rec = Recorded(method, self.path, {k.lower(): v for k, v in self.headers.items()}, raw)
        fake = self.fake
        with fake._lock:
            fake.requests.append(rec)
            fault = self._take_fault(method)
        if fault is not None and fault.kind == "drop":
            return self._drop()
        if fault is not None and fault.kind == "status":
            rec.status = fault.status
            return self._send(fault.status, fault.body, fault.headers)
        status, payload, headers = self._route(method, raw)
        rec.status = status
        if fault is not None and fault.kind == "drop_after":
            return self._drop()
        if fault is not None and fault.kind == "status_after":
            rec.status = fault.status
            return self._send(fault.status, fault.body, fault.headers)
        self._send(status, payload, headers)

    def _take_fault(self, method: str) -> Fault | None:
        path = urlsplit(self.path).path
        for f in self.fake.faults:
            if f.times > 0 and f.method == method and f.path.fullmatch(path):
                f.times -= 1
                return f
        return None

    def _drop(self) -> None:
        # A connection that dies with no response, as a proxy or a restarting front end does.
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = b"" if payload is None else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("X-RateLimit-Limit", "1000")
        if not any(k.lower() == "x-ratelimit-remaining" for k in (headers or {})):
            self.send_header("X-RateLimit-Remaining", "999")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _identity(self) -> Identity | None:
        auth = self.headers.get("Authorization") or ""
        m = re.fullmatch(r"(?:Bearer|token) (\S+)", auth)
        return self.fake.tokens.get(m.group(1)) if m else None

    # ---- the API -----------------------------------------------------------------------------
    def _route(self, method: str, raw: str) -> tuple[int, Any, dict[str, str]]:
        who = self._identity()
        if who is None:
            return 401, {"message": "Bad credentials",
                         "documentation_url": "https://docs.github.com/rest"}, {}
        parts = urlsplit(self.path)
        query = parse_qs(parts.query)
        path = parts.path
        fake = self.fake
        if path == "/user" and method == "GET":
            if who.installation:
                return 403, {"message": "Resource not accessible by integration"}, {}
            return 200, {"login": who.login, "id": who.user_id, "type": who.type}, {}
        with fake._lock:
            repo, rest = self._repo_and_rest(path)
        if repo is None:
            return 404, {"message": "Not Found"}, {}
        if method in ("POST", "PATCH", "DELETE") and not who.can_write:
            return 403, {"message": "Resource not accessible by integration"}, {}
        m = re.fullmatch(r"issues/(\d+)/comments", rest)
        if m and method == "GET":
            return self._list(repo, int(m.group(1)), query)
        if m and method == "POST":
            return self._post(repo, int(m.group(1)), raw, who)
        m = re.fullmatch(r"issues/comments/(\d+)", rest)
        if m and method in ("PATCH", "DELETE", "GET"):
            return self._one(method, repo, int(m.group(1)), raw)
        if rest == "issues" and method == "GET":
            return self._list_issues(repo, query)
        if rest == "issues" and method == "POST":
            return self._post_issue(repo, raw, who)
        m = re.fullmatch(r"issues/(\d+)", rest)
        if m and method in ("GET", "PATCH"):
            return self._one_issue(method, repo, int(m.group(1)), raw)
        m = re.fullmatch(r"pulls/(\d+)", rest)
        if m and method == "GET":
            sha = fake._state.pulls.get((repo, int(m.group(1))))
            if sha is None:
                return 404, {"message": "Not Found"}, {}
            return 200, {"number": int(m.group(1)), "state": "open", "head": {"sha": sha}}, {}
        return 404, {"message": "Not Found"}, {}

    def _repo_and_rest(self, path: str) -> tuple[str | None, str]:
        m = re.fullmatch(r"/repos/([^/]+)/([^/]+)/(.+)", path)
        if m:
            return f"{m.group(1)}/{m.group(2)}", m.group(3)
        m = re.fullmatch(r"/repositories/(\d+)/(.+)", path)
        if m:
            return self.fake._repo_from_id(int(m.group(1))), m.group(2)
        return None, ""

    def _list(self, repo: str, number: int, query: dict[str, list[str]]) -> tuple[int, Any, dict[str, str]]:
        fake = self.fake
        try:
            per_page = min(int(query.get("per_page", ["30"])[0]), 100)
            page = max(int(query.get("page", ["1"])[0]), 1)
        except ValueError:
            return 422, {"message": "Invalid request"}, {}
        with fake._lock:
            items = [dict(c) for c in fake._state.comments.get((repo, number), [])]
            rid = fake._repo_id(repo)
        return self._paged(items, f"/repositories/{rid}/issues/{number}/comments", per_page, page)

    def _paged(self, items: list[dict[str, Any]], path: str, per_page: int, page: int,
               extra: str = "") -> tuple[int, Any, dict[str, str]]:
        fake = self.fake
        last = max((len(items) + per_page - 1) // per_page, 1)
        chunk = items[(page - 1) * per_page: page * per_page]
        base = (fake.link_base or fake.url) + path
        q = f"per_page={per_page}{extra}"  # a next link carries the whole query, as GitHub's do
        links = []
        if page < last:
            links.append(f'<{base}?{q}&page={page + 1}>; rel="next"')
            links.append(f'<{base}?{q}&page={last}>; rel="last"')
        if page > 1:
            links.append(f'<{base}?{q}&page={page - 1}>; rel="prev"')
            links.append(f'<{base}?{q}&page=1>; rel="first"')
        return 200, chunk, ({"Link": ", ".join(links)} if links else {})

    def _list_issues(self, repo: str, query: dict[str, list[str]]) -> tuple[int, Any, dict[str, str]]:
        try:
            per_page = min(int(query.get("per_page", ["30"])[0]), 100)
            page = max(int(query.get("page", ["1"])[0]), 1)
        except ValueError:
            return 422, {"message": "Invalid request"}, {}
        state = query.get("state", ["open"])[0]
        if state not in ("open", "closed", "all"):
            return 422, {"message": "Validation Failed"}, {}
        with self.fake._lock:
            items = [dict(i) for i in self.fake._state.issues.get(repo, []) if state in ("all", i["state"])]
            rid = self.fake._repo_id(repo)
        return self._paged(items, f"/repositories/{rid}/issues", per_page, page, extra=f"&state={state}")

    def _post_issue(self, repo: str, raw: str, who: Identity) -> tuple[int, Any, dict[str, str]]:
        try:
            fields = json.loads(raw)
        except ValueError:
            return 400, {"message": "Problems parsing JSON"}, {}
        if not isinstance(fields, dict) or not isinstance(fields.get("title"), str) or not fields["title"]:
            return 422, {"message": "Validation Failed"}, {}
        if len(fields.get("body") or "") > self.fake.body_limit:
            return 422, {"message": "Validation Failed", "errors": [{"message": "body is too long (maximum is "
                                                                                 f"{self.fake.body_limit} characters)"}]}, {}
        with self.fake._lock:
            return 201, dict(self.fake._create_issue(repo, fields, who)), {}

    def _one_issue(self, method: str, repo: str, number: int, raw: str) -> tuple[int, Any, dict[str, str]]:
        fields: dict[str, Any] = {}
        if method == "PATCH":
            try:
                fields = json.loads(raw)
            except ValueError:
                return 400, {"message": "Problems parsing JSON"}, {}
            if not isinstance(fields, dict) or fields.get("state", "open") not in ("open", "closed"):
                return 422, {"message": "Validation Failed"}, {}
        with self.fake._lock:
            issue = next((i for i in self.fake._state.issues.get(repo, []) if i["number"] == number), None)
            if issue is None:
                return 404, {"message": "Not Found"}, {}
            for key in ("title", "body", "state", "state_reason"):
                if key in fields:
                    issue[key] = fields[key]
            if fields:
                issue["updated_at"] = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            return 200, dict(issue), {}

    def _body(self, raw: str) -> tuple[str | None, tuple[int, Any, dict[str, str]] | None]:
        try:
            body = json.loads(raw).get("body")
        except (ValueError, AttributeError):
            return None, (400, {"message": "Problems parsing JSON"}, {})
        if not isinstance(body, str) or not body:
            return None, (422, {"message": "Validation Failed"}, {})
        if len(body) > self.fake.body_limit:
            return None, (422, {
                "message": "Validation Failed",
                "errors": [{"resource": "IssueComment", "code": "unprocessable", "field": "data",
                            "message": f"Body is too long (maximum is {self.fake.body_limit} characters)"}],
                "documentation_url": "https://docs.github.com/rest/issues/comments",
            }, {})
        return body, None

    def _post(self, repo: str, number: int, raw: str, who: Identity) -> tuple[int, Any, dict[str, str]]:
        body, problem = self._body(raw)
        if problem:
            return problem
        if self.fake.race_barrier is not None:
            self.fake.race_barrier.wait(timeout=10)
        with self.fake._lock:
            return 201, self.fake._create(repo, number, body, who), {}

    def _one(self, method: str, repo: str, cid: int, raw: str) -> tuple[int, Any, dict[str, str]]:
        fake = self.fake
        if method == "PATCH":
            body, problem = self._body(raw)
            if problem:
                return problem
        with fake._lock:
            found = fake._find(repo, cid)
            if found is None:
                return 404, {"message": "Not Found"}, {}
            items, comment = found
            if method == "DELETE":
                items.remove(comment)
                return 204, None, {}
            if method == "PATCH":
                comment["body"] = body
                comment["updated_at"] = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            return 200, dict(comment), {}
