"""A small JSON-over-HTTP client for the SaaS backends, with one translation of HTTP failures."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx2

from jarvis.common.errors import FailedPrecondition, InvalidArgument, JarvisError, NotFound, Unavailable

_DETAIL_CHARS = 300


def _detail(response: httpx2.Response) -> str:
    """What the service said went wrong, from the error shapes Jira and LangSmith use."""
    try:
        body = response.json()
    except ValueError:
        return response.text.strip()[:_DETAIL_CHARS]
    if isinstance(body, dict):
        messages = [str(m) for m in body.get("errorMessages", []) or []]
        errors = body.get("errors")
        if isinstance(errors, dict):
            messages += [f"{k}: {v}" for k, v in errors.items()]
        for key in ("detail", "message", "error"):
            if isinstance(body.get(key), str):
                messages.append(body[key])
        if messages:
            return "; ".join(messages)[:_DETAIL_CHARS]
    return str(body)[:_DETAIL_CHARS]


class RestClient:
    """Calls one service; errors name the service, the method and path, and what to do about it."""

    def __init__(
        self,
        service: str,
        base_url: str,
        *,
        headers: Mapping[str, str] | None = None,
        auth: tuple[str, str] | None = None,
        timeout: float = 20.0,
        credentials_hint: str = "",
    ) -> None:
        self.service = service
        self._base_url = base_url.rstrip("/")
        self._credentials_hint = credentials_hint
        # No redirects: a redirect to another host would carry the API key header along.
        self._http = httpx2.Client(
            base_url=self._base_url, headers=dict(headers or {}), auth=auth, timeout=timeout, follow_redirects=False
        )

    def __enter__(self) -> RestClient:
        return self

    def __exit__(self, *_: object) -> None:
        self._http.close()

    def get(self, path: str, params: Mapping[str, Any] | None = None) -> Any:
        return self._send("GET", path, params=params)

    def post(self, path: str, body: Mapping[str, Any]) -> Any:
        return self._send("POST", path, json=body)

    def _send(self, method: str, path: str, **kwargs: Any) -> Any:
        call = f"{self.service} {method} {path}"
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx2.TimeoutException:
            raise Unavailable(f"{call} timed out at {self._base_url}") from None
        except httpx2.HTTPError as exc:
            raise Unavailable(
                f"{call} failed: {self.service} unreachable at {self._base_url} ({exc.__class__.__name__}: {exc})"
            ) from None
        if response.is_success:
            try:
                return response.json() if response.content else None
            except ValueError:
                raise Unavailable(
                    f"{call} answered {response.status_code} with a body that is not JSON; "
                    f"is {self._base_url} the {self.service} API?"
                ) from None
        raise _status_error(call, response, self._credentials_hint)


def _status_error(call: str, response: httpx2.Response, credentials_hint: str) -> JarvisError:
    status = response.status_code
    if response.is_redirect:
        return FailedPrecondition(
            f"{call} was redirected to {response.headers.get('location', '?')}; "
            f"set the service URL to the address it redirects to ({credentials_hint})"
        )
    text = f"{call} answered {status}: {_detail(response) or response.reason_phrase}"
    if status in (401, 403):
        return FailedPrecondition(f"{text}; {credentials_hint}" if credentials_hint else text)
    if status == 404:
        return NotFound(text)
    if status == 429 or status >= 500:
        return Unavailable(text)
    return InvalidArgument(text)
