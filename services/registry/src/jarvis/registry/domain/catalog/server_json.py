"""The official MCP registry's server.json format (one object, a list, or a registry API listing)."""

from __future__ import annotations

from typing import Any

from jarvis.registry.domain.catalog.parsing import ParsedCatalog, SkipEntry, checked_launch, obj, seq, text
from jarvis.registry.domain.names import slugify
from jarvis.registry.domain.records import CatalogEntry, Launch

FORMAT = "server.json"
SCHEMA_MARKER = "server.schema.json"


def looks_like(data: Any) -> bool:
    items = _items(data)
    return any(
        isinstance(i, dict) and (SCHEMA_MARKER in str(i.get("$schema", "")) or "packages" in i or "remotes" in i)
        for i in items
    )


def parse(data: Any) -> ParsedCatalog:
    parsed = ParsedCatalog(FORMAT)
    for i, raw in enumerate(_items(data)):
        label = raw.get("name") if isinstance(raw, dict) and isinstance(raw.get("name"), str) else f"#{i + 1}"
        try:
            parsed.entries.append(_entry(raw))
        except SkipEntry as exc:
            parsed.skipped.append(f"{label}: {exc}")
    return parsed


def _items(data: Any) -> list[Any]:
    """Server objects, unwrapping the registry API's {"servers": [{"server": {...}}]} envelopes."""
    if isinstance(data, dict) and isinstance(data.get("servers"), list):
        data = data["servers"]
    items = data if isinstance(data, list) else [data]
    return [i["server"] if isinstance(i, dict) and isinstance(i.get("server"), dict) else i for i in items]


def _entry(raw: Any) -> CatalogEntry:
    if not isinstance(raw, dict):
        raise SkipEntry("not a JSON object")
    full_name = text(raw.get("name"))
    if not full_name:
        raise SkipEntry("name is missing")
    # Reverse-DNS names ("io.github.org/weather") keep their namespace so entries never collide.
    name = slugify(full_name.replace("/", "-"))
    if name is None:
        raise SkipEntry("name cannot be turned into a catalog name (at most 63 letters, digits, '.', '_', '-')")
    launch, required_env = _launch(raw)
    repository = obj(raw.get("repository"))
    return CatalogEntry(
        name=name,
        launch=launch,
        title=text(raw.get("title")) or full_name,
        description=text(raw.get("description")),
        homepage=text(raw.get("websiteUrl")) or text(repository.get("url")),
        required_env=required_env,
    )


def _launch(raw: dict[str, Any]) -> tuple[Launch, tuple[str, ...]]:
    """The first package Jarvis can launch, else the first streamable-http remote."""
    reasons: list[str] = []
    for package in seq(raw.get("packages")):
        try:
            return _package_launch(package)
        except SkipEntry as exc:
            reasons.append(str(exc))
    for remote in seq(raw.get("remotes")):
        if not isinstance(remote, dict):
            continue
        kind = text(remote.get("type"))
        if kind not in ("streamable-http", "http"):
            reasons.append(f"remote type '{kind}' is not supported (only streamable-http)")
            continue
        headers = {
            text(h.get("name")): str(h["value"])
            for h in seq(remote.get("headers"))
            if isinstance(h, dict) and text(h.get("name")) and h.get("value") is not None
        }
        return checked_launch(Launch("streamable-http", url=text(remote.get("url")), headers=headers)), ()
    detail = "; ".join(reasons) or "it has no packages and no remotes"
    raise SkipEntry(f"nothing Jarvis can launch ({detail})")


def _package_launch(package: Any) -> tuple[Launch, tuple[str, ...]]:
    if not isinstance(package, dict):
        raise SkipEntry("a package is not an object")
    registry = text(package.get("registryType") or package.get("registry_type") or package.get("registry_name"))
    identifier = text(package.get("identifier") or package.get("name"))
    version = text(package.get("version"))
    transport = obj(package.get("transport"))
    if text(transport.get("type")) not in ("", "stdio"):
        raise SkipEntry(f"package {identifier}: {transport.get('type')} packages need a host that starts them")
    if not identifier:
        raise SkipEntry("a package has no identifier")
    env, required = _environment(package.get("environmentVariables") or package.get("environment_variables"))
    runtime_args = _arguments(package.get("runtimeArguments") or package.get("runtime_arguments"))
    package_args = _arguments(package.get("packageArguments") or package.get("package_arguments"))
    hint = text(package.get("runtimeHint") or package.get("runtime_hint"))
    pinned = version and version != "latest"
    if registry == "npm":
        command = hint or "npx"
        runtime = runtime_args or (["-y"] if command == "npx" else [])
        spec = f"{identifier}@{version}" if pinned else identifier
        launch = Launch("stdio", command=command, args=(*runtime, spec, *package_args), env=env)
    elif registry == "pypi":
        spec = f"{identifier}=={version}" if pinned else identifier
        launch = Launch("stdio", command=hint or "uvx", args=(*runtime_args, spec, *package_args), env=env)
    elif registry in ("oci", "docker"):
        tagged = ":" in identifier.rsplit("/", 1)[-1] or "@" in identifier
        image = identifier if tagged or not pinned else f"{identifier}:{version}"
        launch = Launch("container", image=image, args=tuple(package_args), env=env)
    else:
        raise SkipEntry(f"package {identifier}: registry type '{registry}' is not supported (npm, pypi, oci)")
    return checked_launch(launch), required


def _environment(raw: Any) -> tuple[dict[str, str], tuple[str, ...]]:
    """Variables with a value become defaults; required ones without a value must be supplied at install."""
    env: dict[str, str] = {}
    required: list[str] = []
    for var in raw or []:
        name = text(var.get("name")) if isinstance(var, dict) else ""
        if not name:
            continue
        value = var.get("value", var.get("default"))
        if value not in (None, ""):
            env[name] = str(value)
        elif var.get("isRequired") or var.get("is_required"):
            required.append(name)
    return env, tuple(required)


def _arguments(raw: Any) -> list[str]:
    """Arguments as argv; a required one without a value becomes a visible <placeholder> to edit."""
    argv: list[str] = []
    for arg in raw or []:
        if not isinstance(arg, dict):
            continue
        value = arg.get("value", arg.get("default"))
        required = bool(arg.get("isRequired") or arg.get("is_required"))
        if value is None and required:
            value = f"<{arg.get('valueHint') or arg.get('value_hint') or arg.get('name') or 'value'}>"
        if arg.get("type") == "named":
            if text(arg.get("name")) and (value is not None or required):
                argv.append(text(arg.get("name")))
                argv.extend([] if value is None else [str(value)])
        elif value is not None:
            argv.append(str(value))
    return argv
