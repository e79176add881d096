"""What every service's ORM base shares; each service keeps its own metadata (its own migrations)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, MetaData
from sqlalchemy.types import TypeEngine

from jarvis.common.sql.types import UTCDateTime

# Named constraints make migrations portable (SQLite batch mode needs names to alter them).
NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

TYPE_ANNOTATION_MAP: dict[Any, TypeEngine[Any]] = {
    datetime: UTCDateTime(),
    dict[str, Any]: JSON(),
    list[str]: JSON(),
}


def new_metadata() -> MetaData:
    return MetaData(naming_convention=NAMING_CONVENTION)
