"""TOML and YAML client configs: read to plain data, and edited on a round-trip parse that keeps comments.

JSON files get a minimal text edit instead (config.py with jsonc.py). Here tomlkit and ruamel.yaml
keep every comment, key order and unrelated value; only the server entries Jarvis changes differ.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .formats import ClientFormat

if TYPE_CHECKING:  # imported where a TOML or YAML file is read: listing clients whose files are JSON loads neither
    from ruamel.yaml import YAML


class DocumentError(ValueError):
    """The text is not valid in the client's syntax."""


def parse(client: ClientFormat, text: str) -> Any:
    """The file's content as plain dicts, lists and scalars."""
    return _plain(_load(client, text))


def edit(client: ClientFormat, text: str, remove: Sequence[str], put: Sequence[tuple[str, dict[str, Any]]]) -> str:
    """`text` with the `remove` entries deleted and the `put` entries added or replaced, comments kept."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    doc = _load(client, text)
    if doc is None:  # an empty YAML file
        doc = CommentedMap()
    for key, value in client.top_defaults:
        if key not in doc:
            doc[key] = value
    if client.syntax == "toml":
        return _edit_toml(client, doc, remove, put)
    servers = doc.get(client.servers_key)
    if servers is None:
        servers = CommentedSeq() if client.servers_list else CommentedMap()
        doc[client.servers_key] = servers
    if client.servers_list:
        key = client.shape.name_key or "name"
        kept = [item for item in servers if not (isinstance(item, dict) and item.get(key) in remove)]
        servers[:] = kept
        for name, entry in put:
            at = next((i for i, item in enumerate(servers) if isinstance(item, dict) and item.get(key) == name), None)
            if at is None:
                servers.append(entry)
            else:
                servers[at] = entry
    else:
        for name in remove:
            del servers[name]
        for name, entry in put:
            servers[name] = entry
    out = io.StringIO()
    _yaml().dump(doc, out)
    return out.getvalue()


def _edit_toml(client: ClientFormat, doc: Any, remove: Sequence[str], put: Sequence[tuple[str, dict[str, Any]]]) -> str:
    import tomlkit

    servers = doc.get(client.servers_key)
    if servers is None:
        # A super table renders its entries as [mcp_servers.NAME] without an empty [mcp_servers].
        servers = tomlkit.table(is_super_table=True)
        doc[client.servers_key] = servers
    for name in remove:
        del servers[name]
    for name, entry in put:
        table = tomlkit.table()
        for key, value in entry.items():
            if isinstance(value, dict):
                inline = tomlkit.inline_table()
                inline.update(value)
                table.add(key, inline)
            else:
                table.add(key, value)
        servers[name] = table
    return tomlkit.dumps(doc)


def _load(client: ClientFormat, text: str) -> Any:
    if client.syntax == "toml":
        import tomlkit
        import tomlkit.exceptions

        try:
            return tomlkit.parse(text)
        except tomlkit.exceptions.ParseError as exc:
            raise DocumentError(str(exc)) from exc
    if client.syntax == "yaml":
        from ruamel.yaml.error import YAMLError

        try:
            return _yaml().load(text)
        except YAMLError as exc:
            raise DocumentError(str(exc).replace("\n", " ")) from exc
    raise ValueError(f"{client.syntax} files are edited as text (config.py)")


def _yaml() -> YAML:
    from ruamel.yaml import YAML

    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.width = 4096  # never fold a long URL or token onto two lines
    return yaml


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if hasattr(value, "unwrap"):  # tomlkit scalars (String, Integer, Bool…)
        return value.unwrap()
    return value
