"""Config over gRPC: get, set (typed, JSON values), list, migrate with backup."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import grpc

from jarvis.api.registry.v1 import registry_pb2 as pb
from jarvis.api.registry.v1 import registry_pb2_grpc as pb_grpc

Code = grpc.StatusCode
RpcError = Callable[..., grpc.RpcError]


def test_get_set_list(stub: pb_grpc.RegistryServiceStub) -> None:
    entry = stub.GetConfig(pb.GetConfigRequest(key="aggregator_url"))
    assert (json.loads(entry.value_json), entry.is_default) == ("http://127.0.0.1:8765", True)
    assert entry.description
    entry = stub.SetConfig(pb.SetConfigRequest(key="servers.idle_stop_seconds", value_json="120"))
    assert (json.loads(entry.value_json), entry.is_default) == (120, False)
    listing = stub.ListConfig(pb.ListConfigRequest())
    assert listing.version == 2
    assert listing.path.endswith("config.json")
    values = {e.key: json.loads(e.value_json) for e in listing.entries}
    assert values["servers.idle_stop_seconds"] == 120
    assert values["usage.enabled"] is True
    assert json.loads(Path(listing.path).read_text())["servers"] == {"idle_stop_seconds": 120}


def test_set_errors(stub: pb_grpc.RegistryServiceStub, rpc_error: RpcError) -> None:
    error = rpc_error(stub.SetConfig, pb.SetConfigRequest(key="theme", value_json='"dark"'), Code.INVALID_ARGUMENT)
    assert "unknown config key 'theme'; known keys: aggregator_url" in error.details()
    error = rpc_error(
        stub.SetConfig, pb.SetConfigRequest(key="usage.enabled", value_json='"yes"'), Code.INVALID_ARGUMENT
    )
    assert "takes true or false" in error.details()
    error = rpc_error(stub.SetConfig, pb.SetConfigRequest(key="log_level", value_json="DEBUG"), Code.INVALID_ARGUMENT)
    assert "must be JSON" in error.details()
    rpc_error(stub.GetConfig, pb.GetConfigRequest(key="theme"), Code.INVALID_ARGUMENT)


def test_migrate(stub: pb_grpc.RegistryServiceStub, rpc_error: RpcError) -> None:
    path = Path(stub.ListConfig(pb.ListConfigRequest()).path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"aggregatorUrl": "http://jarvis:8765", "logLevel": "warning"}))
    assert stub.ListConfig(pb.ListConfigRequest()).version == 1
    done = stub.MigrateConfig(pb.MigrateConfigRequest())
    assert (done.from_version, done.to_version) == (1, 2)
    assert json.loads(Path(done.backup_path).read_text())["aggregatorUrl"] == "http://jarvis:8765"
    assert "renamed 'logLevel' to 'log_level'" in done.changes
    assert json.loads(stub.GetConfig(pb.GetConfigRequest(key="log_level")).value_json) == "WARNING"
    again = stub.MigrateConfig(pb.MigrateConfigRequest())
    assert (again.from_version, again.to_version, again.backup_path) == (2, 2, "")
    path.write_text("[1, 2")
    error = rpc_error(stub.ListConfig, pb.ListConfigRequest(), Code.FAILED_PRECONDITION)
    assert "not valid JSON" in error.details()
    assert "backup" in error.details()
