"""A real registry gRPC server on port 0, over SQLite and over PostgreSQL (each test in a fresh schema)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import psycopg
import pytest

from jarvis.api.registry.v1 import registry_pb2_grpc as pb_grpc
from jarvis.common.grpc_server import create_server
from jarvis.registry.app import Registry
from jarvis.registry.server import open_registry, registry_bindings
from jarvis.registry.settings import RegistrySettings
from tests.support.postgres import connect_admin, postgres_schema


@pytest.fixture(scope="session")
def postgres_admin() -> Iterator[psycopg.Connection[Any]]:
    """One autocommit connection that creates and drops the per-test schemas."""
    conn = connect_admin()
    yield conn
    conn.close()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'registry.db'}"
        return
    with postgres_schema(request.getfixturevalue("postgres_admin")) as url:
        yield url


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def registry(database_url: str, tmp_path: Path, home: Path) -> Iterator[Registry]:
    settings = RegistrySettings(data_dir=tmp_path / "data", home=home, database_url=database_url)
    opened = open_registry(settings)
    yield opened
    opened.close()


@pytest.fixture
def stub(registry: Registry, tmp_path: Path) -> Iterator[pb_grpc.RegistryServiceStub]:
    running = create_server(registry_bindings(registry, [tmp_path]), "127.0.0.1:0")
    channel = grpc.insecure_channel(f"127.0.0.1:{running.port}")
    yield pb_grpc.RegistryServiceStub(channel)
    channel.close()
    running.stop(0)


@pytest.fixture
def rpc_error() -> Callable[..., grpc.RpcError]:
    """Call `method(request)` expecting a failure; returns the error for code and message checks."""

    def call(method: Callable[[Any], Any], request: Any, code: grpc.StatusCode) -> grpc.RpcError:
        with pytest.raises(grpc.RpcError) as exc:
            method(request)
        assert exc.value.code() == code, exc.value.details()
        return exc.value

    return call
