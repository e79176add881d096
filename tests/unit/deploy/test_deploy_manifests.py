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

from jarvis.aggregator.downstream.hosting.host import DownstreamHost
from jarvis.aggregator.downstream.hosting.metrics import DownstreamCollector
from jarvis.aggregator.downstream.hosting.result_cache import ResultCache
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
    lines = (DEPLOY / "k8s" / "base" / "jarvis.env").read_text().splitlines()
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
    assert not unknown, f"deploy/k8s/base/jarvis.env sets variables no settings class reads: {sorted(unknown)}"


def test_env_file_values_parse_in_their_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in _env_file().items():
        monkeypatch.setenv(key, value)
    aggregator = AggregatorSettings()
    registry = RegistrySettings()
    assert aggregator.auth_required  # listens on 0.0.0.0: tokens are required
    assert aggregator.stateless
    assert registry.metrics_port == 9100
    assert "jarvis.internal" in aggregator.allowed_hosts
    assert aggregator.oidc_issuer == ""  # sign-in is off until the admin names the provider
    assert aggregator.oauth_access_token_ttl_seconds == 300


def test_compose_and_k8s_run_real_cli_services() -> None:
    services = set(serve.params[0].type.choices)  # type: ignore[attr-defined]
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    assert compose["x-jarvis"]["env_file"] == "k8s/base/jarvis.env"  # the same settings file as Kubernetes
    commands = [svc["command"] for svc in compose["services"].values() if svc.get("command", [""])[0] == "serve"]
    assert {c[1] for c in commands} <= services
    assert {"registry", "aggregator", "debug", "runtime", "scheduler", "scheduler-worker", "scheduler-beat"} <= {
        c[1] for c in commands
    }
    k8s_args = []
    for path in (DEPLOY / "k8s" / "base").glob("*.yaml"):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc["kind"] in ("Deployment", "StatefulSet", "Job"):
                k8s_args += [c["args"] for c in doc["spec"]["template"]["spec"]["containers"] if c["image"] == "jarvis"]
    assert {a[1] for a in k8s_args if a[0] == "serve"} == {c[1] for c in commands}
    kustomization = yaml.safe_load((DEPLOY / "k8s" / "base" / "kustomization.yaml").read_text())
    assert {g["envs"][0] for g in kustomization["configMapGenerator"]} == {"jarvis.env"}


def test_dashboard_queries_only_metrics_the_code_exports() -> None:
    registry = CollectorRegistry()
    AggregatorMetrics(registry)
    GrpcMetrics(registry)
    SchedulerMetrics(registry)
    registry.register(DownstreamCollector(cast(DownstreamHost, SimpleNamespace(hosts={}, results=ResultCache()))))
    exported = {sample.name for family in registry.collect() for sample in family.samples}
    exported |= {family.name for family in registry.collect()}  # families a scrape may show with no sample yet
    exported |= {f"{family.name}_total" for family in registry.collect() if family.type == "counter"}
    exported |= {f"{family.name}_bucket" for family in registry.collect() if family.type == "histogram"}
    dashboard = json.loads((DEPLOY / "grafana" / "dashboards" / "jarvis.json").read_text())
    titles = set()
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            used = set(re.findall(r"\b(?:jarvis|process)_[a-z_]+", target["expr"]))
            if re.search(r"\bup\b", target["expr"]):
                titles.add(panel["title"])  # `up` is Prometheus's own, one per scraped process
            else:
                assert used, panel["title"]
            assert used <= exported, (panel["title"], used - exported)
        titles |= {panel["title"] for target in panel["targets"] if "process_" in target["expr"]}
    assert {"Processes up by job", "Resident memory by process", "CPU by process (cores)"} <= titles
