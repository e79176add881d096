"""deploy/ stays true to the code: settings names, CLI services, metric names, hardening."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest
import yaml
from prometheus_client import CollectorRegistry
from pydantic_settings import BaseSettings

from jarvis.aggregator.downstream.host import DownstreamHost
from jarvis.aggregator.downstream.metrics import DownstreamCollector
from jarvis.aggregator.metrics import AggregatorMetrics
from jarvis.aggregator.settings import AggregatorSettings
from jarvis.cli.main import serve
from jarvis.common.metrics import GrpcMetrics
from jarvis.debug.settings import DebugSettings
from jarvis.registry.settings import RegistrySettings
from jarvis.runtime.settings import RuntimeSettings
from jarvis.scheduler.adapters.metrics import SchedulerMetrics
from jarvis.scheduler.settings import SchedulerSettings

DEPLOY = Path(__file__).resolve().parents[3] / "deploy"


def _env_file() -> dict[str, str]:
    lines = (DEPLOY / "jarvis.env").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))


def _env_names(settings_class: type[BaseSettings]) -> set[str]:
    names = set()
    prefix = settings_class.model_config.get("env_prefix", "")
    for name, field in settings_class.model_fields.items():
        alias = field.validation_alias
        names |= {c.upper() for c in getattr(alias, "choices", [])} if alias else {f"{prefix}{name}".upper()}
    return names


def test_every_variable_in_the_env_file_is_a_real_setting() -> None:
    known = _env_names(RegistrySettings) | _env_names(AggregatorSettings) | _env_names(DebugSettings)
    known |= _env_names(RuntimeSettings) | _env_names(SchedulerSettings)
    unknown = set(_env_file()) - known
    assert not unknown, f"deploy/jarvis.env sets variables no settings class reads: {sorted(unknown)}"


def test_env_file_values_parse_in_their_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in _env_file().items():
        monkeypatch.setenv(key, value)
    aggregator = AggregatorSettings()
    registry = RegistrySettings()
    assert aggregator.auth_required  # listens on 0.0.0.0: tokens are required
    assert aggregator.stateless
    assert registry.metrics_port == 9100
    assert "jarvis.internal" in aggregator.allowed_hosts


def test_compose_and_k8s_run_real_cli_services() -> None:
    services = set(serve.params[0].type.choices)  # type: ignore[attr-defined]
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    commands = [svc["command"] for svc in compose["services"].values() if svc.get("command", [""])[0] == "serve"]
    assert {c[1] for c in commands} <= services
    assert {"registry", "aggregator", "debug", "runtime", "scheduler", "scheduler-worker", "scheduler-beat"} <= {
        c[1] for c in commands}
    for name in ("registry.yaml", "aggregator.yaml", "debug.yaml", "scheduler.yaml"):
        for doc in yaml.safe_load_all((DEPLOY / "k8s" / name).read_text()):
            if doc["kind"] == "Deployment":
                container = doc["spec"]["template"]["spec"]["containers"][0]
                assert container["args"][0] == "serve"
                assert container["args"][1] in services
                security = container["securityContext"]
                assert security["readOnlyRootFilesystem"] is True
                assert security["capabilities"]["drop"] == ["ALL"]
                assert security["allowPrivilegeEscalation"] is False
    kustomization = yaml.safe_load((DEPLOY / "k8s" / "kustomization.yaml").read_text())
    for resource in kustomization["resources"]:
        assert (DEPLOY / "k8s" / resource).is_file()
    assert kustomization["configMapGenerator"][0]["envs"] == ["../jarvis.env"]


def test_dashboard_queries_only_metrics_the_code_exports() -> None:
    registry = CollectorRegistry()
    AggregatorMetrics(registry)
    GrpcMetrics(registry)
    SchedulerMetrics(registry)
    registry.register(DownstreamCollector(cast(DownstreamHost, SimpleNamespace(hosts={}))))
    exported = {sample.name for family in registry.collect() for sample in family.samples}
    exported |= {family.name for family in registry.collect()}  # families a scrape may show with no sample yet
    exported |= {f"{family.name}_total" for family in registry.collect() if family.type == "counter"}
    exported |= {f"{family.name}_bucket" for family in registry.collect() if family.type == "histogram"}
    dashboard = json.loads((DEPLOY / "grafana" / "dashboards" / "jarvis.json").read_text())
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            used = set(re.findall(r"\bjarvis_[a-z_]+", target["expr"]))
            assert used, panel["title"]
            assert used <= exported, (panel["title"], used - exported)
