"""The closed internal plane: every gRPC service refuses callers without the deployment's service credential.

Real servers on port 0 (registry, runtime, scheduler, debug), real channels; TLS with a CA made here.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from pydantic import SecretStr

from jarvis.aggregator.gateways.registry import RegistryGateway
from jarvis.api.debug.v1 import debug_pb2, debug_pb2_grpc
from jarvis.api.registry.v1 import registry_pb2 as rpb
from jarvis.api.registry.v1 import registry_pb2_grpc
from jarvis.api.runtime.v1 import runtime_pb2, runtime_pb2_grpc
from jarvis.api.scheduler.v1 import scheduler_pb2, scheduler_pb2_grpc
from jarvis.cli.embedded import EmbeddedSettings
from jarvis.common.errors import FailedPrecondition
from jarvis.common.grpc_client import sync_channel
from jarvis.common.grpc_server import create_server
from jarvis.common.internal_plane import TOKEN, TOKEN_FILE_NAME, InternalPlane, PlaneConfigError, load_plane
from jarvis.common.service import RunningService, launch
from jarvis.debug import server as debug_server
from jarvis.debug.settings import DebugSettings
from jarvis.registry import server as registry_server
from jarvis.registry.settings import RegistrySettings
from jarvis.runtime.server import serve_runtime
from jarvis.runtime.settings import RuntimeSettings
from jarvis.scheduler import server as scheduler_server
from jarvis.scheduler.adapters.runtime_grpc import GrpcRuntime
from jarvis.scheduler.settings import SchedulerSettings
from tests.support.runtime_service import TEST_SECRETS_KEY
from tests.support.tls import Authority

pytestmark = pytest.mark.anyio

SECRET = secrets.token_hex(32)


@dataclass
class Served:
    """One service behind the interceptor and a harmless read to call on it."""

    name: str
    port: int
    call: Callable[[grpc.Channel, float], Any]


def _registry_call(channel: grpc.Channel, timeout: float) -> Any:
    return registry_pb2_grpc.RegistryServiceStub(channel).ListTokens(rpb.ListTokensRequest(), timeout=timeout)


def _runtime_call(channel: grpc.Channel, timeout: float) -> Any:
    return runtime_pb2_grpc.RuntimeServiceStub(channel).GetLimits(runtime_pb2.GetLimitsRequest(), timeout=timeout)


def _scheduler_call(channel: grpc.Channel, timeout: float) -> Any:
    return scheduler_pb2_grpc.SchedulerServiceStub(channel).ListSchedules(
        scheduler_pb2.ListSchedulesRequest(), timeout=timeout
    )


def _debug_call(channel: grpc.Channel, timeout: float) -> Any:
    return debug_pb2_grpc.DebugServiceStub(channel).ListCategories(debug_pb2.ListCategoriesRequest(), timeout=timeout)


@pytest.fixture(scope="module")
def services(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Served]]:
    """The four services as their processes build them, each given the deployment's credential."""
    tmp = tmp_path_factory.mktemp("plane")
    registry = launch(
        registry_server.build,
        RegistrySettings(data_dir=tmp / "registry", home=tmp, internal_token=SECRET),
        "127.0.0.1:0",
    )
    runtime, runtime_server = serve_runtime(
        RuntimeSettings(
            data_dir=tmp / "runtime",
            listen="127.0.0.1:0",
            docker_host="unix:///nonexistent/docker.sock",
            internal_token=SECRET,
            secrets_key=SecretStr(TEST_SECRETS_KEY),
        ),
        None,
    )
    scheduler = launch(
        scheduler_server.build,
        SchedulerSettings(
            data_dir=tmp / "scheduler",
            listen="127.0.0.1:0",
            redis_url="",
            database_url=f"sqlite:///{tmp / 'scheduler.db'}",
            internal_token=SECRET,
        ),
        "127.0.0.1:0",
    )
    debug = launch(debug_server.build, DebugSettings(listen="127.0.0.1:0", internal_token=SECRET), "127.0.0.1:0")
    try:
        yield {
            "registry": Served("registry", registry.port, _registry_call),
            "runtime": Served("runtime", runtime_server.port, _runtime_call),
            "scheduler": Served("scheduler", scheduler.port, _scheduler_call),
            "debug": Served("debug", debug.port, _debug_call),
        }
    finally:
        scheduler.stop(0)
        debug.stop(0)
        registry.stop(0)
        runtime_server.stop(0)
        runtime.close()


NAMES = ["registry", "runtime", "scheduler", "debug"]


def _code(call: Callable[[], Any]) -> grpc.StatusCode:
    try:
        call()
    except grpc.RpcError as exc:
        return exc.code()
    return grpc.StatusCode.OK


@pytest.mark.parametrize("name", NAMES)
def test_a_caller_without_the_credential_is_refused(services: dict[str, Served], name: str) -> None:
    served = services[name]
    with grpc.insecure_channel(f"127.0.0.1:{served.port}") as channel:
        assert _code(lambda: served.call(channel, 10)) == grpc.StatusCode.UNAUTHENTICATED
    with sync_channel(f"127.0.0.1:{served.port}", {}, InternalPlane(token="not-" + SECRET)) as channel:
        assert _code(lambda: served.call(channel, 10)) == grpc.StatusCode.UNAUTHENTICATED
    with sync_channel(f"127.0.0.1:{served.port}", {}, InternalPlane(token=SECRET)) as channel:
        assert _code(lambda: served.call(channel, 10)) == grpc.StatusCode.OK


@pytest.mark.parametrize("name", NAMES)
def test_health_stays_open_for_probes(services: dict[str, Served], name: str) -> None:
    with grpc.insecure_channel(f"127.0.0.1:{services[name].port}") as channel:
        reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=10)
    assert reply.status == health_pb2.HealthCheckResponse.SERVING


def test_reflection_is_not_open(services: dict[str, Served]) -> None:
    """Only health is open: the method list is not handed to anyone who asks."""
    from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

    with grpc.insecure_channel(f"127.0.0.1:{services['registry'].port}") as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        replies = stub.ServerReflectionInfo(
            iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=10
        )
        assert _code(lambda: list(replies)) == grpc.StatusCode.UNAUTHENTICATED


def test_minting_an_admin_token_without_the_credential_fails(services: dict[str, Served]) -> None:
    """The attack of issue 11: reach the registry's port, call CreateToken, get an admin token."""
    target = f"127.0.0.1:{services['registry'].port}"
    with grpc.insecure_channel(target) as channel:
        stub = registry_pb2_grpc.RegistryServiceStub(channel)
        with pytest.raises(grpc.RpcError) as refused:
            stub.CreateToken(rpb.CreateTokenRequest(name="attacker", scopes=["admin"]), timeout=10)
    assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert TOKEN in (refused.value.details() or "")
    with sync_channel(target, {}, InternalPlane(token=SECRET)) as channel:
        tokens = registry_pb2_grpc.RegistryServiceStub(channel).ListTokens(rpb.ListTokensRequest(), timeout=10)
    assert "attacker" not in [t.name for t in tokens.tokens]


async def test_the_aggregator_client_names_the_setting_when_its_credential_is_refused(
    services: dict[str, Served],
) -> None:
    """A wrong credential is a deployment fault, not a user's bad token: the error says which setting to fix."""
    target = f"127.0.0.1:{services['registry'].port}"
    wrong = RegistryGateway(target, plane=InternalPlane(token="wrong"))
    right = RegistryGateway(target, plane=InternalPlane(token=SECRET))
    try:
        with pytest.raises(FailedPrecondition) as refused:
            await wrong.list_tokens()
        assert TOKEN in str(refused.value)
        assert target in str(refused.value)
        created = await right.create_token("ok", ["read"])
        assert created.secret.startswith("jv_")
    finally:
        await wrong.close()
        await right.close()


def test_the_scheduler_worker_calls_the_runtime_with_the_credential(services: dict[str, Served]) -> None:
    """The Celery worker's runtime client (GrpcRuntime) carries the credential; without it the call is refused."""
    target = f"127.0.0.1:{services['runtime'].port}"
    with_credential = GrpcRuntime(target, InternalPlane(token=SECRET))
    without = GrpcRuntime(target)
    try:
        # No Docker engine here: the runtime answers NOT_FOUND for the unknown project, which it could
        # only do after the interceptor let the call through.
        assert with_credential.missing_projects(["p000000000000"]) == ["p000000000000"]
        with pytest.raises(FailedPrecondition, match=TOKEN):
            without.missing_projects(["p000000000000"])
    finally:
        with_credential.close()
        without.close()


def test_a_service_beyond_loopback_without_a_credential_refuses_to_start(tmp_path: Path) -> None:
    with pytest.raises(PlaneConfigError, match=TOKEN):
        create_server([], "0.0.0.0:0")
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "JARVIS_REGISTRY_DATA_DIR": str(tmp_path),
        "JARVIS_REGISTRY_LISTEN": "0.0.0.0:0",
        "JARVIS_LOG_JSON": "false",
    }
    env.pop(TOKEN, None)
    env.pop("JARVIS_INTERNAL_TOKEN_FILE", None)
    result = subprocess.run(
        [sys.executable, "-m", "jarvis.cli", "serve", "registry"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode != 0
    assert TOKEN in result.stderr
    assert "Traceback" not in result.stderr


def test_credential_settings(tmp_path: Path) -> None:
    secret_file = tmp_path / "token"
    secret_file.write_text(f"  {SECRET}\n")
    assert load_plane("ignored", secret_file, None, None, None).token == SECRET  # the file wins, stripped
    assert load_plane(f" {SECRET} ", None, None, None, None).token == SECRET
    with pytest.raises(PlaneConfigError, match="JARVIS_INTERNAL_TOKEN_FILE"):
        load_plane(None, tmp_path / "missing", None, None, None)
    (tmp_path / "empty").write_text("\n")
    with pytest.raises(PlaneConfigError, match="JARVIS_INTERNAL_TOKEN_FILE"):
        load_plane(None, tmp_path / "empty", None, None, None)
    with pytest.raises(PlaneConfigError, match="JARVIS_GRPC_TLS_KEY"):
        load_plane(SECRET, None, secret_file, None, None)
    assert SECRET not in repr(load_plane(SECRET, None, None, None, None))


def test_jarvis_up_makes_an_owner_only_credential_once(tmp_path: Path) -> None:
    settings = EmbeddedSettings(data_dir=tmp_path / "data")
    settings.use_local_token()
    path = tmp_path / "data" / TOKEN_FILE_NAME
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert settings.internal_plane().token == path.read_text().strip()
    again = EmbeddedSettings(data_dir=tmp_path / "data")
    again.use_local_token()
    assert again.internal_plane().token == settings.internal_plane().token  # `jarvis --registry` can find it


def test_admin_cli_reaches_a_deployed_registry_only_with_the_credential(
    tmp_path: Path, services: dict[str, Served]
) -> None:
    target = f"127.0.0.1:{services['registry'].port}"
    base = [sys.executable, "-m", "jarvis.cli", "--data-dir", str(tmp_path), "--registry", target]
    env = {**os.environ, "JARVIS_LOG_LEVEL": "WARNING"}
    env.pop(TOKEN, None)
    refused = subprocess.run(
        [*base, "token", "create", "--name", "x", "--scope", "admin"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert refused.returncode != 0
    assert TOKEN in refused.stderr
    assert "Traceback" not in refused.stderr
    made = subprocess.run(
        [*base, "token", "create", "--name", "ops", "--scope", "admin"],
        env={**env, TOKEN: SECRET},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert made.returncode == 0, made.stderr
    assert made.stdout.startswith("jv_")


# --------------------------------------------------------------------------------------------- TLS


@pytest.fixture(scope="module")
def authority(tmp_path_factory: pytest.TempPathFactory) -> Authority:
    return Authority(tmp_path_factory.mktemp("ca"))


def _tls_server(tmp: Path, authority: Authority, mutual: bool) -> RunningService:
    issued = authority.issue("registry")
    plane = load_plane(SECRET, None, issued.cert, issued.key, authority.path if mutual else None)
    return launch(registry_server.build, RegistrySettings(data_dir=tmp, home=tmp), "127.0.0.1:0", plane=plane)


async def test_tls_serves_clients_that_trust_the_ca_and_refuses_plaintext(tmp_path: Path, authority: Authority) -> None:
    server = _tls_server(tmp_path, authority, mutual=False)
    target = f"127.0.0.1:{server.port}"
    client = RegistryGateway(target, plane=load_plane(SECRET, None, None, None, authority.path))
    try:
        assert await client.list_tokens() == []
        with grpc.insecure_channel(target) as plain:
            assert _code(lambda: _registry_call(plain, 5)) == grpc.StatusCode.UNAVAILABLE
        stranger = Authority(tmp_path, "another-ca")  # a server signed by someone else is not trusted
        with sync_channel(target, {}, load_plane(SECRET, None, None, None, stranger.path)) as untrusted:
            assert _code(lambda: _registry_call(untrusted, 5)) == grpc.StatusCode.UNAVAILABLE
    finally:
        await client.close()
        server.stop(0)


def test_mutual_tls_refuses_a_client_without_a_certificate(tmp_path: Path, authority: Authority) -> None:
    server = _tls_server(tmp_path, authority, mutual=True)
    target = f"127.0.0.1:{server.port}"
    client_cert = authority.issue("aggregator")
    try:
        with sync_channel(target, {}, load_plane(SECRET, None, None, None, authority.path)) as anonymous:
            assert _code(lambda: _registry_call(anonymous, 5)) == grpc.StatusCode.UNAVAILABLE
        plane = load_plane(SECRET, None, client_cert.cert, client_cert.key, authority.path)
        with sync_channel(target, {}, plane) as identified:
            assert _code(lambda: _registry_call(identified, 5)) == grpc.StatusCode.OK
        with sync_channel(target, {}, plane.with_token("wrong")) as wrong_token:
            assert _code(lambda: _registry_call(wrong_token, 5)) == grpc.StatusCode.UNAUTHENTICATED
    finally:
        server.stop(0)


async def test_a_streaming_call_carries_the_credential(services: dict[str, Served]) -> None:
    """AttachServer (bidirectional, driven through the gateway's pipe as the downstream host drives it) passes the
    interceptor with the credential: the runtime then answers about its missing engine, not about the caller."""
    from jarvis.aggregator.gateways.runtime import RuntimeGateway
    from jarvis.aggregator.gateways.server_pipe import PipeBroken

    target = f"127.0.0.1:{services['runtime'].port}"
    with_credential, without = RuntimeGateway(target, InternalPlane(token=SECRET)), RuntimeGateway(target)
    try:
        # Refused before any message is read: a write racing the refusal may see the stream reset instead of its
        # status, so the refused caller only reads.
        refused = without.attach_server()
        with pytest.raises(PipeBroken) as broken:
            await asyncio.wait_for(refused.read(), 20)
        refused.cancel()
        assert "credential" in broken.value.detail.lower() or "unauthenticated" in broken.value.detail.lower()
        admitted = with_credential.attach_server()
        with pytest.raises(OSError, match="cannot run image 'some/image'") as failed:
            await asyncio.wait_for(admitted.start("s", "some/image", (), {}), 20)
        assert "credential" not in str(failed.value).lower()
        assert "unauthenticated" not in str(failed.value).lower()
    finally:
        await with_credential.close()
        await without.close()


@pytest.mark.parametrize("service", ["registry", "scheduler-worker"])
def test_an_unreadable_credential_file_stops_a_process_at_start(tmp_path: Path, service: str) -> None:
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "JARVIS_REGISTRY_DATA_DIR": str(tmp_path),
        "JARVIS_LOG_JSON": "false",
        "JARVIS_SCHEDULER_REDIS_URL": "redis://127.0.0.1:1/0",
        "JARVIS_INTERNAL_TOKEN_FILE": str(tmp_path / "none"),
    }
    result = subprocess.run(
        [sys.executable, "-m", "jarvis.cli", "serve", service],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode != 0
    assert "JARVIS_INTERNAL_TOKEN_FILE" in result.stderr
    assert "Traceback" not in result.stderr
