"""One client config file: reading its server map, and rendering a change as a minimal text edit."""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jarvis.common.errors import FailedPrecondition

from . import documents, jsonc
from .files import BOM, read_text
from .formats import ClientFormat

log = logging.getLogger(__name__)


class ConfigUnreadable(Exception):
    """The file exists but cannot be used: not UTF-8, not JSON, or not shaped like a client config."""


@dataclass(frozen=True)
class LoadedConfig:
    path: Path
    text: str | None  # None: the file does not exist
    root: dict[str, Any]
    servers: dict[str, Any]


def load_config(client: ClientFormat, path: Path) -> LoadedConfig:
    try:
        text = read_text(path)
    except UnicodeDecodeError as exc:
        raise ConfigUnreadable(f"{path} is not UTF-8 text") from exc
    except OSError as exc:
        raise ConfigUnreadable(f"{path} cannot be read: {exc.strerror or exc}") from exc
    if text is None:
        return LoadedConfig(path, None, {}, {})
    body = text.removeprefix(BOM)
    root: Any = {}
    kind = _SYNTAX_NAMES[client.syntax]
    if body.strip():  # an empty file is what some editors create: treat it as an empty config
        try:
            if client.syntax in ("json", "jsonc"):
                root = jsonc.parse(body, jsonc=client.jsonc).root.value
            else:
                root = documents.parse(client, body)
        except (jsonc.JsonSyntaxError, documents.DocumentError) as exc:
            raise ConfigUnreadable(f"{path} is not valid {kind}: {exc}") from exc
    root = {} if root is None else root
    if not isinstance(root, dict):
        raise ConfigUnreadable(f"{path}: the top level is not a {kind} object")
    found = root.get(client.servers_key)
    servers = _servers(client, found, path, kind)
    return LoadedConfig(path, text, root, servers)


_SYNTAX_NAMES = {"json": "JSON", "jsonc": "JSON with comments", "toml": "TOML", "yaml": "YAML"}


def _servers(client: ClientFormat, found: Any, path: Path, kind: str) -> dict[str, Any]:
    """{entry name: entry}; a list-shaped section (Continue) is keyed by each entry's name."""
    if found is None:
        return {}
    if not client.servers_list:
        if not isinstance(found, dict):
            raise ConfigUnreadable(f'{path}: "{client.servers_key}" is not a {kind} object')
        return found
    if not isinstance(found, list):
        raise ConfigUnreadable(f'{path}: "{client.servers_key}" is not a {kind} list')
    key = client.shape.name_key or "name"
    return {item[key]: item for item in found if isinstance(item, dict) and isinstance(item.get(key), str)}


def render(
    client: ClientFormat,
    loaded: LoadedConfig,
    remove: Sequence[str],
    put: Sequence[tuple[str, dict[str, Any]]],
) -> str:
    """The file's new text: `remove` entries deleted, then `put` entries added or replaced.

    The change is made as a text edit so comments, formatting and all other keys stay byte for
    byte. The edited text is parsed back and compared with the same change made on the parsed
    data; only if they differ (never seen, but cheap to guard) is the file re-serialised whole,
    which keeps every key and its order but drops comments.
    """
    expected = _expected(client, loaded, remove, put)

    original = (loaded.text or "").removeprefix(BOM)
    bom = BOM if (loaded.text or "").startswith(BOM) else ""
    if client.syntax in ("toml", "yaml"):
        # A round-trip parse keeps comments; the result is checked like the JSON text edit is.
        text = documents.edit(client, original, remove, put)
        if not _same(documents.parse(client, text), expected):
            raise FailedPrecondition(
                f"editing {loaded.path} did not give the expected content; "
                "Jarvis left the file untouched: edit it by hand"
            )
        return bom + text
    if not original.strip():
        return bom + json.dumps(expected, indent=2, ensure_ascii=False) + "\n"

    text = original
    path = (client.servers_key,)
    try:
        for name in remove:
            text = jsonc.remove_member(text, path, name, jsonc=client.jsonc)
        for name, entry in put:
            text = jsonc.set_member(text, path, name, entry, jsonc=client.jsonc)
        ok = _same(jsonc.parse(text, jsonc=client.jsonc).root.value, expected)
    except (ValueError, KeyError):
        ok = False
    if not ok:
        log.warning(
            "minimal edit of a client config did not verify; rewriting the whole file",
            extra={"client": client.name, "path": str(loaded.path)},
        )
        text = json.dumps(expected, indent=jsonc.indent_unit(original), ensure_ascii=False)
        text = text.replace("\n", jsonc.newline_of(original))
        if original.endswith("\n"):
            text += jsonc.newline_of(original)
    return bom + text


def _expected(
    client: ClientFormat, loaded: LoadedConfig, remove: Sequence[str], put: Sequence[tuple[str, dict[str, Any]]]
) -> dict[str, Any]:
    """The parsed content the edited file must have."""
    expected = copy.deepcopy(loaded.root)
    for key, value in client.top_defaults:
        expected.setdefault(key, value)
    if client.servers_list:
        key = client.shape.name_key or "name"
        items = expected.setdefault(client.servers_key, [])
        items[:] = [i for i in items if not (isinstance(i, dict) and i.get(key) in remove)]
        for name, entry in put:
            at = next((n for n, i in enumerate(items) if isinstance(i, dict) and i.get(key) == name), None)
            if at is None:
                items.append(entry)
            else:
                items[at] = entry
        return expected
    servers = expected.setdefault(client.servers_key, {})
    for name in remove:
        del servers[name]
    for name, entry in put:
        servers[name] = entry
    return expected


def _same(left: Any, right: Any) -> bool:
    """Equal including key order (dict equality ignores order)."""
    return json.dumps(left, ensure_ascii=False) == json.dumps(right, ensure_ascii=False)
