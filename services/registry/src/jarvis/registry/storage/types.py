"""Column types of the registry's tables (shared with every service: jarvis.common.sql.types)."""

from __future__ import annotations

from jarvis.common.sql.types import UTCDateTime, utcnow

__all__ = ["UTCDateTime", "utcnow"]
