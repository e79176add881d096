"""Cron expressions: validation with reasons, next fire times and the ticks between two instants."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from croniter import croniter
from croniter.croniter import CroniterError

from jarvis.common.errors import InvalidArgument

FIELDS = "minute hour day-of-month month day-of-week"
EXAMPLE = "'0 3 * * 1-5' (03:00 on weekdays)"
MAX_COUNTED_TICKS = 100_000
# Validation looks for the shortest gap between fires over a week (and into the next), at least
# a few fires, and at most a minute cron's full day.
INTERVAL_HORIZON = timedelta(days=8)
INTERVAL_MIN_FIRES = 3
INTERVAL_MAX_FIRES = 1_500


@dataclass(frozen=True)
class Cron:
    """A validated cron expression read in one time zone; every instant in and out is UTC-aware."""

    expression: str
    timezone: str

    @classmethod
    def parse(cls, expression: str, timezone: str = "", min_interval_seconds: int = 60) -> Cron:
        """Validate `expression`; the error says which part is wrong and what a good one looks like."""
        expression = " ".join(expression.split())
        zone = timezone.strip() or "UTC"
        if not expression:
            raise InvalidArgument(f"cron is empty; give five fields ({FIELDS}), e.g. {EXAMPLE}")
        fields = expression.split(" ")
        seconds_allowed = min_interval_seconds < 60
        if len(fields) not in ((5, 6) if seconds_allowed else (5,)):
            raise InvalidArgument(
                f"cron '{expression}' has {len(fields)} fields; give five ({FIELDS}), e.g. {EXAMPLE}"
                + ("" if not seconds_allowed else ", or six with a trailing seconds field")
            )
        _zone(zone)
        try:
            croniter(expression, datetime.now(UTC))
        except (CroniterError, ValueError, KeyError) as exc:
            raise InvalidArgument(
                f"cron '{expression}' is not valid ({exc}); fields are {FIELDS}, e.g. {EXAMPLE}"
            ) from exc
        cron = cls(expression, zone)
        cron._check_interval(min_interval_seconds)
        return cron

    def _check_interval(self, min_interval_seconds: int) -> None:
        """Refuse fires closer than `min_interval_seconds`, and a cron that never fires (e.g. February 30).

        The short gap may lie anywhere in the cron's cycle (10:20 -> 10:21 of '0,10,20,21 * * * *'), so
        the fires of the coming week are checked, not only the next few: the verdict must not depend on
        the time of day the schedule is made.
        """
        start = datetime.now(UTC)
        fires = croniter(self.expression, start.astimezone(_zone(self.timezone)))
        previous: datetime | None = None
        for count in range(1, INTERVAL_MAX_FIRES + 1):
            try:
                fire = fires.get_next(datetime).astimezone(UTC)
            except CroniterError as exc:
                if previous is not None:
                    return
                raise InvalidArgument(
                    f"cron '{self.expression}' never fires ({exc}); check that its day-of-month "
                    f"exists in its month, e.g. {EXAMPLE}"
                ) from exc
            if previous is not None:
                gap = (fire - previous).total_seconds()
                if gap < min_interval_seconds:
                    raise InvalidArgument(
                        f"cron '{self.expression}' fires every {gap:g}s; this scheduler allows at "
                        f"most one fire per {min_interval_seconds}s"
                    )
            previous = fire
            if count >= INTERVAL_MIN_FIRES and fire - start > INTERVAL_HORIZON:
                return

    def next_after(self, instant: datetime) -> datetime:
        """The first fire strictly after `instant`."""
        local = instant.astimezone(_zone(self.timezone))
        fire = croniter(self.expression, local).get_next(datetime)
        assert isinstance(fire, datetime)
        return fire.astimezone(UTC)

    def next_fires(self, after: datetime, count: int) -> list[datetime]:
        fires: list[datetime] = []
        current = after
        for _ in range(count):
            current = self.next_after(current)
            fires.append(current)
        return fires

    def ticks_between(self, first: datetime, until: datetime, limit: int) -> tuple[list[datetime], int]:
        """Fires in [first, until], where `first` is itself a fire: at most the last `limit`, and how many in all."""
        ticks = [first] if first <= until else []
        total = len(ticks)
        current = first
        while ticks:
            current = self.next_after(current)
            if current > until:
                break
            total += 1
            ticks.append(current)
            if len(ticks) > limit:
                ticks.pop(0)
            if total >= MAX_COUNTED_TICKS:  # a minute cron after months of downtime: count no further
                break
        return ticks, total


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        hint = ", ".join(sorted(z for z in available_timezones() if z.startswith("Europe/"))[:3])
        raise InvalidArgument(f"time zone '{name}' is unknown; use an IANA name such as UTC, {hint}") from exc
