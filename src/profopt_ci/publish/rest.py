"""A small GitHub REST client for issue comments and issues: auth, retries, rate limits, pagination.

Waiting is bounded: every pause goes through `wait`, which refuses (InfraError, exit 3) once the
total would pass `max_wait_s`, so a job never hangs for an hour on a rate-limit reset. `sleep` and
`clock` are injectable so tests run fast and can check the waits.

The token travels only in the Authorization header, only to the API's own origin (a Link header
pointing elsewhere is refused), and every message this module builds is passed through `redact`.

In: the API URL, a token, a repository and PR. Out: the JSON of GitHub's answers (comments, the
pull request, the token's login), or a typed error (NotFound, PermissionDenied, BodyTooLong,
AmbiguousWrite; InfraError when GitHub stays unreachable).
"""
from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

import requests

from profopt_ci import __version__
from profopt_ci.errors import InfraError, UsageError

DEFAULT_API_URL = "https://api.github.com"
API_VERSION = "2022-11-28"
BOT_LOGIN = "github-actions[bot]"  # the author of comments made with an Actions GITHUB_TOKEN
_REPO_RE = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
_MAX_PAGES = 500  # 50,000 comments: past that something is looping


class GitHubError(InfraError):
    """A GitHub API failure (exit 3 unless a subclass says otherwise)."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class PermissionDenied(GitHubError):
    """403 that is not a rate limit: the token may not do this (a fork PR's read-only token)."""


class NotFound(GitHubError):
    """404: the repository, PR or comment does not exist or the token cannot see it."""


class BodyTooLong(GitHubError):
    """422 "Body is too long". `max_chars` is the limit GitHub named, when it named one."""

    def __init__(self, message: str, *, max_chars: int | None) -> None:
        super().__init__(message, status=422)
        self.max_chars = max_chars


class AmbiguousWrite(GitHubError):
    """A write whose outcome is unknown (connection lost, 5xx): it may have taken effect."""


def check_repo(repo: str) -> str:
    if not _REPO_RE.fullmatch(repo or "") or ".." in repo:
        raise UsageError(f"repository must look like owner/name, got {repo!r}")
    return repo


def normalize_api_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError("GitHub API URL must be an http(s) URL")
    if parts.username or parts.password or parts.query or parts.fragment:
        raise UsageError("GitHub API URL must not carry credentials, a query or a fragment")
    return url.rstrip("/")


def _origin(url: str) -> tuple[str, str, int | None]:
    p = urlsplit(url)
    port = p.port or {"http": 80, "https": 443}.get(p.scheme)
    return p.scheme, (p.hostname or "").lower(), port


def _float(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _message(resp: requests.Response) -> str:
    try:
        data = resp.json()
    except ValueError:
        return resp.text[:200].strip() or resp.reason or ""
    if not isinstance(data, dict):
        return ""
    parts = [str(data.get("message") or "")]
    for err in data.get("errors") or []:
        if isinstance(err, dict) and err.get("message"):
            parts.append(str(err["message"]))
    return ": ".join(p for p in parts if p)[:300]


class _TokenAuth(requests.auth.AuthBase):
    # An explicit auth object also stops requests from reading ~/.netrc over our header, and
    # requests drops it on a redirect to another host.
    def __init__(self, token: str) -> None:
        self._token = token

    def __call__(self, r: requests.PreparedRequest) -> requests.PreparedRequest:
        r.headers["Authorization"] = f"Bearer {self._token}"
        return r


class GitHubClient:
    """Issue-comment calls against one API base URL with one token."""

    def __init__(self, api_url: str, token: str, *, sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.time, max_wait_s: float = 300.0,
                 max_attempts: int = 8, timeout_s: float = 30.0, backoff_base_s: float = 1.0,
                 secondary_wait_s: float = 60.0, session: requests.Session | None = None) -> None:
        if not token:
            raise UsageError("no GitHub token: set GITHUB_TOKEN or pass --token")
        self.api_url = normalize_api_url(api_url)
        self._origin = _origin(self.api_url)
        self._token = token
        self._auth = _TokenAuth(token)
        self._session = session or requests.Session()
        self._session.headers.update({
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": API_VERSION,
            "User-Agent": f"profopt/{__version__}",
        })
        self.sleep, self.clock = sleep, clock
        self.max_wait_s, self.max_attempts = max_wait_s, max_attempts
        self.timeout_s, self.backoff_base_s = timeout_s, backoff_base_s
        self.secondary_wait_s = secondary_wait_s
        self.waited_s = 0.0
        self.waits: list[float] = []

    def __enter__(self) -> GitHubClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self._session.close()

    def redact(self, text: str) -> str:
        # A real token is 36+ characters; redacting a tiny one would mangle every message.
        return text.replace(self._token, "***") if len(self._token) >= 8 else text

    # ---- waiting -----------------------------------------------------------------------------
    def backoff_delay(self, attempt: int) -> float:
        return min(self.backoff_base_s * 2 ** (attempt - 1), 60.0)

    def wait(self, seconds: float, reason: str) -> None:
        """Sleep `seconds`, or raise InfraError if that would pass the total budget."""
        seconds = max(seconds, 0.0)
        if self.waited_s + seconds > self.max_wait_s:
            raise InfraError(self.redact(
                f"{reason}; waiting {seconds:.0f}s more would pass the retry budget "
                f"(max_wait_s={self.max_wait_s:.0f}, already waited {self.waited_s:.0f}s)"))
        self.waits.append(seconds)
        self.waited_s += seconds
        self.sleep(seconds)

    def _rate_limit_delay(self, resp: requests.Response, attempt: int) -> float | None:
        if resp.status_code not in (403, 429):
            return None
        h = resp.headers
        retry_after = _float(h.get("retry-after"))
        if retry_after is not None:
            return retry_after
        if h.get("x-ratelimit-remaining") == "0":
            reset = _float(h.get("x-ratelimit-reset"))
            # +1: the reset second itself may still be counted against us.
            return max(reset - self.clock(), 0.0) + 1.0 if reset is not None else self.secondary_wait_s
        if resp.status_code == 429 or "rate limit" in _message(resp).lower():
            # Secondary limit without a hint: GitHub asks for at least a minute, then longer.
            return max(self.secondary_wait_s, self.backoff_delay(attempt))
        return None

    # ---- requests ----------------------------------------------------------------------------
    def url(self, path_or_url: str) -> str:
        if path_or_url.startswith(("http://", "https://")):
            if _origin(path_or_url) != self._origin:
                raise InfraError("GitHub sent a link to another host; not following it with the token")
            return path_or_url
        return self.api_url + path_or_url

    def request(self, method: str, path: str, *, params: dict[str, Any] | None = None,
                json: Any = None, write: bool = False) -> requests.Response:
        """One API call with retries. `write=True`: a lost connection or a 5xx raises AmbiguousWrite
        instead of retrying, because the write may have happened (the caller re-reads first)."""
        url = self.url(path)
        shown = f"{method} {urlsplit(url).path}"
        last = ""
        for attempt in range(1, self.max_attempts + 1):
            try:
                resp = self._session.request(method, url, params=params, json=json, auth=self._auth,
                                             timeout=(10.0, self.timeout_s))
            except (requests.ConnectionError, requests.Timeout,
                    requests.exceptions.ChunkedEncodingError) as exc:
                last = self.redact(f"{type(exc).__name__}: {str(exc)[:200]}")
                if write:
                    raise AmbiguousWrite(f"GitHub API {shown}: {last}") from None
                if attempt < self.max_attempts:
                    self.wait(self.backoff_delay(attempt), f"GitHub API {shown}: {last}")
                continue
            if 200 <= resp.status_code < 300:
                return resp
            delay = self._rate_limit_delay(resp, attempt)
            if delay is not None:
                last = f"rate limited ({resp.status_code} {self.redact(_message(resp))})"
                if attempt < self.max_attempts:
                    self.wait(delay, f"GitHub API {shown}: {last}")
                continue
            if resp.status_code >= 500:
                last = f"{resp.status_code} {self.redact(_message(resp))}"
                if write:
                    raise AmbiguousWrite(f"GitHub API {shown}: {last}", status=resp.status_code)
                if attempt < self.max_attempts:
                    hinted = _float(resp.headers.get("retry-after"))
                    self.wait(hinted if hinted is not None else self.backoff_delay(attempt),
                              f"GitHub API {shown}: {last}")
                continue
            raise self._error(shown, resp)
        raise InfraError(self.redact(
            f"GitHub API {shown}: gave up after {self.max_attempts} attempts "
            f"({self.waited_s:.0f}s spent waiting); last error: {last}"))

    def _error(self, shown: str, resp: requests.Response) -> GitHubError:
        status, msg = resp.status_code, self.redact(_message(resp))
        text = f"GitHub API {shown}: {status} {msg}".rstrip()
        if status == 401:
            return GitHubError(f"{text} (the token was rejected: expired, revoked or mistyped)",
                               status=status)
        if status == 403:
            return PermissionDenied(text, status=status)
        if status == 404:
            return NotFound(text, status=status)
        if status == 422 and "too long" in msg.lower():
            m = re.search(r"maximum is (\d+)", msg)
            return BodyTooLong(text, max_chars=int(m.group(1)) if m else None)
        return GitHubError(text, status=status)

    def _json(self, resp: requests.Response) -> Any:
        try:
            return resp.json()
        except ValueError:
            raise GitHubError(f"GitHub API returned non-JSON ({resp.status_code})") from None

    def paginate(self, path: str, params: dict[str, Any] | None = None) -> Iterator[Any]:
        """Items of a list endpoint across pages, following `Link: rel="next"` verbatim."""
        resp = self.request("GET", path, params={"per_page": 100, **(params or {})})
        for _ in range(_MAX_PAGES):
            page = self._json(resp)
            if not isinstance(page, list):
                raise GitHubError(f"GitHub API {path}: expected a list")
            yield from page
            nxt = resp.links.get("next", {}).get("url")
            if not nxt:
                return
            resp = self.request("GET", nxt)  # the next URL already carries per_page and page
        raise GitHubError(f"GitHub API {path}: more than {_MAX_PAGES} pages")

    # ---- endpoints ---------------------------------------------------------------------------
    def authenticated_login(self) -> str | None:
        """The token's login, or None for an installation token (GET /user -> 403)."""
        try:
            data = self._json(self.request("GET", "/user"))
        except PermissionDenied:
            return None
        return str(data.get("login")) if isinstance(data, dict) and data.get("login") else None

    def list_issue_comments(self, repo: str, number: int) -> list[dict[str, Any]]:
        return list(self.paginate(f"/repos/{check_repo(repo)}/issues/{int(number)}/comments"))

    def create_issue_comment(self, repo: str, number: int, body: str) -> dict[str, Any]:
        resp = self.request("POST", f"/repos/{check_repo(repo)}/issues/{int(number)}/comments",
                            json={"body": body}, write=True)
        return self._json(resp)

    def update_issue_comment(self, repo: str, comment_id: int, body: str) -> dict[str, Any]:
        # PATCH with the same body is idempotent, so it may retry on its own.
        resp = self.request("PATCH", f"/repos/{check_repo(repo)}/issues/comments/{int(comment_id)}",
                            json={"body": body})
        return self._json(resp)

    def delete_issue_comment(self, repo: str, comment_id: int) -> None:
        self.request("DELETE", f"/repos/{check_repo(repo)}/issues/comments/{int(comment_id)}")

    def get_pull(self, repo: str, number: int) -> dict[str, Any]:
        return self._json(self.request("GET", f"/repos/{check_repo(repo)}/pulls/{int(number)}"))

    # ---- issues (the nightly's change points: publish/issues.py) -----------------------------------
    def list_issues(self, repo: str, *, state: str = "all", labels: str | None = None) -> list[dict[str, Any]]:
        """Issues (not pull requests) of the repository, every page."""
        params = {"state": state, **({"labels": labels} if labels else {})}
        items = self.paginate(f"/repos/{check_repo(repo)}/issues", params)
        return [i for i in items if isinstance(i, dict) and "pull_request" not in i]

    def create_issue(self, repo: str, title: str, body: str, labels: list[str] | None = None) -> dict[str, Any]:
        resp = self.request("POST", f"/repos/{check_repo(repo)}/issues",
                            json={"title": title, "body": body, **({"labels": labels} if labels else {})}, write=True)
        return self._json(resp)

    def update_issue(self, repo: str, number: int, **fields: Any) -> dict[str, Any]:
        """PATCH title, body, state (open/closed) or state_reason: idempotent, so it may retry."""
        return self._json(self.request("PATCH", f"/repos/{check_repo(repo)}/issues/{int(number)}", json=fields))
