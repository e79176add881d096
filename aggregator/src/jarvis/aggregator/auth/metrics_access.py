"""Who may read /metrics, and in which format it is written."""

from __future__ import annotations

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.openmetrics import exposition as openmetrics
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from jarvis.aggregator.auth.verifier import TokenVerifier
from jarvis.aggregator.auth.wire import REALM
from jarvis.aggregator.metrics import AggregatorMetrics
from jarvis.common import scopes
from jarvis.common.errors import JarvisError, Unauthenticated

OPENMETRICS = "application/openmetrics-text"


def exposition(registry: CollectorRegistry, accept: str) -> Response:
    """The metrics in the format the scraper asks for: OpenMetrics (with the latency histograms' exemplars, each a
    trace id where traces are on) to one that accepts it, as Prometheus does; the text format otherwise."""
    if OPENMETRICS in accept:
        body = openmetrics.generate_latest(registry)  # type: ignore[no-untyped-call]  # untyped in prometheus_client
        return Response(body, media_type=openmetrics.CONTENT_TYPE_LATEST)
    return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)


class MetricsAccess:
    """Who may read /metrics where it needs a token (`metrics_require_token`, by default whenever tokens are required).

    The metrics name installed servers, their tools and failure counts, so beyond an open loopback Jarvis they are
    not for everyone. Least privilege: a token with the `metrics` scope (which allows nothing else), or `admin`/`*`.
    No token: 401 with `WWW-Authenticate`; a token without the scope: 403. Prometheus sends its token from a file
    (`authorization: {credentials_file: ...}` in its scrape config).
    """

    def __init__(self, verifier: TokenVerifier, metrics: AggregatorMetrics) -> None:
        self.verifier = verifier
        self.metrics = metrics

    async def refusal(self, request: Request) -> Response | None:
        """The answer refusing `request`, or None when its token may read the metrics."""
        header = request.headers.get("authorization", "")
        kind, _, secret = header.partition(" ")
        if not header:
            return self._unauthorized(
                "missing",
                REALM,
                f"/metrics needs a token: send 'Authorization: Bearer <token>' with a token of scope "
                f"'{scopes.METRICS}' (`jarvis token create --name prometheus --scope {scopes.METRICS}`)",
            )
        if kind.lower() != "bearer" or not secret.strip():
            return self._unauthorized("malformed", f'{REALM}, error="invalid_token"', "malformed Authorization header")
        try:
            principal = await self.verifier.verify(secret.strip())
        except Unauthenticated:
            return self._unauthorized("invalid", f'{REALM}, error="invalid_token"', "invalid, expired or revoked token")
        except JarvisError:
            self.metrics.auth_failures.labels("token_unverifiable").inc()
            return JSONResponse(
                {"error": "unavailable", "message": "cannot verify the token: the registry is unreachable"},
                status_code=503,
            )
        if not scopes.reads_metrics(principal.scopes):
            self.metrics.auth_failures.labels("insufficient_scope").inc()
            return JSONResponse(
                {
                    "error": "insufficient_scope",
                    "message": f"your token's scopes ({', '.join(principal.scopes)}) do not include "
                    f"'{scopes.METRICS}', the scope that reads /metrics (or admin)",
                },
                status_code=403,
                headers={"WWW-Authenticate": f'{REALM}, error="insufficient_scope", scope="{scopes.METRICS}"'},
            )
        return None

    def _unauthorized(self, problem: str, challenge: str, message: str) -> Response:
        self.metrics.auth_failures.labels(f"token_{problem}").inc()
        return JSONResponse(
            {"error": "unauthorized", "message": message}, status_code=401, headers={"WWW-Authenticate": challenge}
        )
