"""The naming rule shared by servers and profiles."""

from __future__ import annotations

import re

from jarvis.common.errors import InvalidArgument

NAME_RULE = "1-63 characters: lowercase letters, digits, '.', '_' or '-', starting with a letter or digit"
_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,62}$")


def validate_name(name: str, kind: str) -> str:
    """The name lowered (names are case-insensitive), or InvalidArgument stating the rule."""
    lowered = name.strip().lower()
    if not lowered:
        raise InvalidArgument(f"{kind} name is required ({NAME_RULE})")
    if not _NAME.match(lowered):
        raise InvalidArgument(f"invalid {kind} name '{name}': use {NAME_RULE}")
    return lowered


def is_valid_name(name: str) -> bool:
    return bool(_NAME.match(name))


def slugify(raw: str) -> str | None:
    """A valid name made from free text ('Ant Design Components' -> 'ant-design-components'), or None."""
    slug = re.sub(r"[^a-z0-9._-]+", "-", raw.strip().lower()).strip("-._")
    slug = re.sub(r"-{2,}", "-", slug)
    return slug if _NAME.match(slug) else None
