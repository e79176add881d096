"""Time arguments as agents write them: "1h" (ago), "now", ISO-8601, or epoch seconds."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from jarvis.common.errors import InvalidArgument

TIME_HELP = 'relative ("30m", "2h", "7d" ago), "now", ISO-8601 ("2026-01-31T12:00:00Z") or epoch seconds'
_RELATIVE = re.compile(r"^-?(\d+)\s*([smhdw])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_time(value: str, name: str, now: datetime | None = None) -> datetime:
    """An aware UTC datetime for `value`; InvalidArgument naming the argument and the formats."""
    now = now or datetime.now(UTC)
    text = value.strip().lower()
    if text == "now":
        return now
    relative = _RELATIVE.match(text)
    if relative:
        return now - timedelta(**{_UNITS[relative.group(2)]: int(relative.group(1))})
    if text.isdigit():
        seconds = int(text)
        # Values past year ~2286 in seconds are epoch milliseconds (what AWS APIs print).
        return datetime.fromtimestamp(seconds / 1000 if seconds > 10**10 else seconds, UTC)
    try:
        parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise InvalidArgument(f"argument '{name}': cannot read {value!r} as a time; use {TIME_HELP}") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def epoch_ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")
