"""One client config file: reading its server map, and rendering a change as a minimal text edit."""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import jsonc
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
    if body.strip():  # an empty file is what some editors create: treat it as an empty config
        try:
            root = jsonc.parse(body, jsonc=client.jsonc).root.value
        except jsonc.JsonSyntaxError as exc:
            kind = "JSON with comments" if client.jsonc else "JSON"
            raise ConfigUnreadable(f"{path} is not valid {kind}: {exc}") from exc
    if not isinstance(root, dict):
        raise ConfigUnreadable(f"{path}: the top level is not a JSON object")
    servers = root.get(client.servers_key, {})
    if not isinstance(servers, dict):
        raise ConfigUnreadable(f'{path}: "{client.servers_key}" is not a JSON object')
    return LoadedConfig(path, text, root, servers)


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
    expected = copy.deepcopy(loaded.root)
    servers = expected.setdefault(client.servers_key, {})
    for name in remove:
        del servers[name]
    for name, entry in put:
        servers[name] = entry

    original = (loaded.text or "").removeprefix(BOM)
    bom = BOM if (loaded.text or "").startswith(BOM) else ""
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


def _same(left: Any, right: Any) -> bool:
    """Equal including key order (dict equality ignores order)."""
    return json.dumps(left, ensure_ascii=False) == json.dumps(right, ensure_ascii=False)
