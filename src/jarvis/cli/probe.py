"""`jarvis probe`: the health check a container runs on itself (Compose healthchecks; the image has no curl).

Exit 0 when the process answers healthy, 1 with the reason otherwise, within a bounded time.
"""

from __future__ import annotations

import urllib.error
import urllib.request

import click
import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from jarvis.common.errors import JarvisError
from jarvis.common.grpc_client import sync_channel

TIMEOUT_SECONDS = 3.0


@click.group()
def probe() -> None:
    """Check that a local service answers healthy (for container healthchecks)."""


@probe.command("grpc")
@click.argument("target")
@click.option("--service", default="", help="Health service name; default: the whole server.")
def probe_grpc(target: str, service: str) -> None:
    """SERVING from the standard gRPC health check of TARGET (host:port)."""
    # The project's channel factory and the process's own TLS settings (JARVIS_GRPC_TLS_*): whatever transport
    # security the services use, the probe uses too. Health needs no credential, but TLS needs the CA.
    try:
        from jarvis.common.settings import ProcessSettings  # SQLAlchemy and pydantic: only when needed

        plane = ProcessSettings().internal_plane()
    except JarvisError as exc:
        raise click.ClickException(f"{target}: {exc}") from None
    with sync_channel(target, {}, plane) as channel:
        try:
            status = (
                health_pb2_grpc.HealthStub(channel)
                .Check(health_pb2.HealthCheckRequest(service=service), timeout=TIMEOUT_SECONDS)
                .status
            )
        except grpc.RpcError as exc:
            raise click.ClickException(f"{target}: {exc.code().name}: {exc.details()}") from None
    if status != health_pb2.HealthCheckResponse.SERVING:
        raise click.ClickException(f"{target}: {health_pb2.HealthCheckResponse.ServingStatus.Name(status)}")


@probe.command("http")
@click.argument("url")
def probe_http(url: str) -> None:
    """A 2xx answer from URL (only http:// on this host's interfaces is meant; nothing is followed)."""
    if not url.startswith("http://"):
        raise click.UsageError("URL must start with http:// (a local endpoint such as http://127.0.0.1:8765/readyz)")
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_SECONDS) as response:  # noqa: S310 - http:// checked above
            status = response.status
    except urllib.error.HTTPError as exc:
        raise click.ClickException(f"{url}: HTTP {exc.code}") from None
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        raise click.ClickException(f"{url}: {getattr(exc, 'reason', exc)}") from None
    if not 200 <= status < 300:
        raise click.ClickException(f"{url}: HTTP {status}")


if __name__ == "__main__":
    probe()
