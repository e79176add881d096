"""Bootstrap and Doctor over gRPC."""

from __future__ import annotations

import stat
from pathlib import Path

from jarvis.api.registry.v1 import registry_pb2 as pb
from jarvis.api.registry.v1 import registry_pb2_grpc as pb_grpc


def test_bootstrap_is_idempotent(stub: pb_grpc.RegistryServiceStub) -> None:
    first = stub.Bootstrap(pb.BootstrapRequest())
    assert first.catalog_entries >= 15
    assert list(first.profiles_created) == ["default", "core"]
    assert any(s.startswith("config written to ") for s in first.steps)
    assert "server 'time' installed" in first.steps
    second = stub.Bootstrap(pb.BootstrapRequest())
    assert list(second.profiles_created) == []
    assert "profile 'core' exists" in second.steps
    assert any(s.startswith("config exists at ") for s in second.steps)
    core = stub.GetProfile(pb.GetProfileRequest(name="core"))
    assert list(core.servers) == ["sequential-thinking", "time"]
    assert len(stub.ListServers(pb.ListServersRequest()).servers) == 2


def test_doctor_reports_every_check(stub: pb_grpc.RegistryServiceStub) -> None:
    checks = {c.name: c for c in stub.Doctor(pb.DoctorRequest()).checks}
    assert set(checks) == {"config", "database", "migrations", "catalog", "data_dir"}
    assert all(c.ok for c in checks.values()), checks
    assert "reachable" in checks["database"].detail
    assert checks["database"].detail.split()[0] in {"sqlite", "postgresql"}
    assert "newest revision" in checks["migrations"].detail


def test_doctor_flags_an_old_config(stub: pb_grpc.RegistryServiceStub) -> None:
    stub.SetConfig(pb.SetConfigRequest(key="log_level", value_json='"INFO"'))
    path = stub.ListConfig(pb.ListConfigRequest()).path
    with open(path, "w") as handle:
        handle.write('{"logLevel": "info"}')
    checks = {c.name: c for c in stub.Doctor(pb.DoctorRequest()).checks}
    assert not checks["config"].ok
    assert "run MigrateConfig" in checks["config"].detail


def test_doctor_names_a_data_dir_other_users_can_read(stub: pb_grpc.RegistryServiceStub) -> None:
    stub.Bootstrap(pb.BootstrapRequest())
    data_dir = Path(stub.ListConfig(pb.ListConfigRequest()).path).parent
    assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700  # made by Jarvis, so owner-only
    data_dir.chmod(0o755)
    check = {c.name: c for c in stub.Doctor(pb.DoctorRequest()).checks}["data_dir"]
    assert not check.ok
    assert f"{data_dir} is readable by others (mode 0o755): run `chmod 700 {data_dir}`" in check.detail
    data_dir.chmod(0o700)
    assert {c.name: c for c in stub.Doctor(pb.DoctorRequest()).checks}["data_dir"].ok
