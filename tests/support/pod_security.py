"""Pod Security Standards, "restricted" profile (which includes "baseline"), checked on a pod spec.

Written after the official definitions (kubernetes.io/docs/concepts/security/pod-security-standards, version
"latest"): each rule below names the control it implements. Returns the violations, empty when the pod passes.
"""

from __future__ import annotations

from typing import Any

# Baseline: sysctls a pod may set.
SAFE_SYSCTLS = {
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
}
SELINUX_TYPES = {"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"}
# Restricted: the only volume types allowed.
RESTRICTED_VOLUMES = {
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
}
SECCOMP_ALLOWED = {"RuntimeDefault", "Localhost"}


def _containers(pod: dict[str, Any]) -> list[dict[str, Any]]:
    return [*pod.get("initContainers", []), *pod.get("containers", []), *pod.get("ephemeralContainers", [])]


def restricted_violations(pod: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    pod_sc = pod.get("securityContext") or {}
    # Baseline: host namespaces.
    problems += [f"spec.{field} must not be true" for field in ("hostNetwork", "hostPID", "hostIPC") if pod.get(field)]
    # Baseline: HostProcess (Windows).
    if (pod_sc.get("windowsOptions") or {}).get("hostProcess"):
        problems.append("securityContext.windowsOptions.hostProcess must not be true")
    # Baseline: sysctls.
    problems += [
        f"sysctl {s['name']} is not in the safe set" for s in pod_sc.get("sysctls", []) if s["name"] not in SAFE_SYSCTLS
    ]
    # Restricted: volume types (which also rules out baseline's hostPath).
    for volume in pod.get("volumes", []):
        kinds = set(volume) - {"name"}
        if not kinds <= RESTRICTED_VOLUMES:
            problems.append(f"volume {volume['name']}: type {sorted(kinds)} is not allowed")
    # Restricted: running as non-root and non-zero user, at pod level or on every container.
    pod_non_root = pod_sc.get("runAsNonRoot") is True
    if pod_sc.get("runAsUser") == 0:
        problems.append("securityContext.runAsUser must not be 0")
    pod_seccomp = (pod_sc.get("seccompProfile") or {}).get("type")
    if pod_seccomp is not None and pod_seccomp not in SECCOMP_ALLOWED:
        problems.append(f"securityContext.seccompProfile.type {pod_seccomp} is not allowed")
    problems += _selinux("securityContext", pod_sc)
    problems += _apparmor("securityContext", pod_sc)
    for container in _containers(pod):
        problems += _container_violations(container, pod_non_root, pod_seccomp is not None)
    return problems


def _container_violations(container: dict[str, Any], pod_non_root: bool, pod_seccomp: bool) -> list[str]:
    where = f"container {container['name']}"
    sc = container.get("securityContext") or {}
    problems: list[str] = []
    # Baseline: privileged containers, host ports, /proc mount type.
    if sc.get("privileged"):
        problems.append(f"{where}: privileged must not be true")
    problems += [
        f"{where}: hostPort {p['hostPort']} is not allowed" for p in container.get("ports", []) if p.get("hostPort")
    ]
    if sc.get("procMount", "Default") != "Default":
        problems.append(f"{where}: procMount must be Default")
    if (sc.get("windowsOptions") or {}).get("hostProcess"):
        problems.append(f"{where}: windowsOptions.hostProcess must not be true")
    # Restricted: no privilege escalation, explicitly.
    if sc.get("allowPrivilegeEscalation") is not False:
        problems.append(f"{where}: allowPrivilegeEscalation must be false")
    # Restricted: non-root.
    if sc.get("runAsNonRoot") is False or (not pod_non_root and sc.get("runAsNonRoot") is not True):
        problems.append(f"{where}: runAsNonRoot must be true (on the pod or the container)")
    if sc.get("runAsUser") == 0:
        problems.append(f"{where}: runAsUser must not be 0")
    # Restricted: seccomp RuntimeDefault or Localhost, on the pod or every container; never Unconfined.
    seccomp = (sc.get("seccompProfile") or {}).get("type")
    if seccomp is not None and seccomp not in SECCOMP_ALLOWED:
        problems.append(f"{where}: seccompProfile.type {seccomp} is not allowed")
    if seccomp is None and not pod_seccomp:
        problems.append(f"{where}: seccompProfile.type must be set (RuntimeDefault or Localhost)")
    # Restricted: drop ALL capabilities; add back NET_BIND_SERVICE at most.
    capabilities = sc.get("capabilities") or {}
    if "ALL" not in capabilities.get("drop", []):
        problems.append(f"{where}: capabilities.drop must include ALL")
    added = set(capabilities.get("add", [])) - {"NET_BIND_SERVICE"}
    if added:
        problems.append(f"{where}: capabilities.add {sorted(added)} is not allowed")
    problems += _selinux(where, sc) + _apparmor(where, sc)
    return problems


def _selinux(where: str, sc: dict[str, Any]) -> list[str]:
    options = sc.get("seLinuxOptions") or {}
    problems = [f"{where}: seLinuxOptions.{field} must not be set" for field in ("user", "role") if options.get(field)]
    if options.get("type", "") not in SELINUX_TYPES:
        problems.append(f"{where}: seLinuxOptions.type {options['type']} is not allowed")
    return problems


def _apparmor(where: str, sc: dict[str, Any]) -> list[str]:
    profile = (sc.get("appArmorProfile") or {}).get("type")
    if profile is not None and profile not in ("RuntimeDefault", "Localhost"):
        return [f"{where}: appArmorProfile.type {profile} is not allowed"]
    return []
