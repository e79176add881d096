"""Cron expressions: what is accepted, why the rest is refused, and time zones."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, tzinfo

import pytest

from jarvis.common.errors import InvalidArgument
from jarvis.scheduler.domain import cron as cron_module
from jarvis.scheduler.domain.cron import Cron


def test_five_fields_are_accepted() -> None:
    cron = Cron.parse("  0  3 * *   1-5 ")
    assert (cron.expression, cron.timezone) == ("0 3 * * 1-5", "UTC")
    monday = datetime(2025, 1, 6, 12, tzinfo=UTC)
    assert cron.next_fires(monday, 3) == [datetime(2025, 1, d, 3, tzinfo=UTC) for d in (7, 8, 9)]


def test_six_fields_are_refused_at_minute_resolution() -> None:
    with pytest.raises(InvalidArgument) as err:
        Cron.parse("* * * * * */2", min_interval_seconds=60)
    assert "has 6 fields" in err.value.message
    assert "five" in err.value.message
    assert "seconds" not in err.value.message  # not offered where it is not allowed


def test_six_fields_read_the_last_as_seconds_when_allowed() -> None:
    cron = Cron.parse("* * * * * */2", min_interval_seconds=1)
    start = datetime(2025, 1, 6, 10, 0, 1, 500_000, tzinfo=UTC)
    assert cron.next_fires(start, 3) == [start.replace(microsecond=0) + timedelta(seconds=s) for s in (1, 3, 5)]
    with pytest.raises(InvalidArgument, match=r"has 7 fields.*or six with a trailing seconds field"):
        Cron.parse("* * * * * * *", min_interval_seconds=1)


@pytest.mark.parametrize(
    ("expression", "says"),
    [
        ("61 * * * *", "'61 * * * *' is not valid"),
        ("* 24 * * *", "is not valid"),
        ("* * * * mon-xyz", "is not valid"),
        ("every day", "has 2 fields"),
        ("   ", "cron is empty"),
    ],
)
def test_bad_expressions_say_why(expression: str, says: str) -> None:
    with pytest.raises(InvalidArgument) as err:
        Cron.parse(expression)
    assert says in err.value.message
    assert "minute hour day-of-month month day-of-week" in err.value.message  # and what a good one looks like


def test_time_zone_is_honoured() -> None:
    paris = Cron.parse("0 3 * * *", "Europe/Paris")
    utc = Cron.parse("0 3 * * *", "UTC")
    winter, summer = datetime(2025, 1, 15, tzinfo=UTC), datetime(2025, 7, 15, tzinfo=UTC)
    assert utc.next_after(winter) == datetime(2025, 1, 15, 3, tzinfo=UTC)
    assert paris.next_after(winter) == datetime(2025, 1, 15, 2, tzinfo=UTC)  # CET, UTC+1
    assert paris.next_after(summer) == datetime(2025, 7, 15, 1, tzinfo=UTC)  # CEST, UTC+2
    assert all(f.tzinfo == UTC for f in paris.next_fires(winter, 3))


def test_empty_time_zone_means_utc() -> None:
    assert Cron.parse("0 3 * * *", "  ").timezone == "UTC"


def test_unknown_time_zone_is_refused() -> None:
    with pytest.raises(InvalidArgument) as err:
        Cron.parse("0 3 * * *", "Mars/Olympus")
    assert "time zone 'Mars/Olympus' is unknown" in err.value.message
    assert "IANA" in err.value.message


@pytest.mark.parametrize(
    ("expression", "min_interval", "every"),
    [
        ("* * * * *", 120, "60s"),
        ("*/5 * * * * */10", 30, "10s"),
        ("* * * * * *", 2, "1s"),
    ],
)
def test_a_cron_firing_more_often_than_allowed_is_refused(expression: str, min_interval: int, every: str) -> None:
    with pytest.raises(InvalidArgument) as err:
        Cron.parse(expression, min_interval_seconds=min_interval)
    assert f"fires every {every}" in err.value.message
    assert f"one fire per {min_interval}s" in err.value.message


def frozen_now(monkeypatch: pytest.MonkeyPatch, now: datetime) -> None:
    """Make `Cron.parse` validate as if the wall clock read `now`."""

    class AnyDatetime(type):
        def __instancecheck__(cls, instance: object) -> bool:
            return isinstance(instance, datetime)

    class Frozen(datetime, metaclass=AnyDatetime):
        @classmethod
        def now(cls, tz: tzinfo | None = None) -> Frozen:
            return cls.fromtimestamp(now.timestamp(), tz)

    monkeypatch.setattr(cron_module, "datetime", Frozen)


@pytest.mark.parametrize(
    ("expression", "min_interval", "now", "every"),
    [
        # 10:20 -> 10:21 is the only short gap; from 10:22 the next three fires are 11:00, 11:10, 11:20.
        ("0,10,20,21 * * * *", 120, datetime(2025, 1, 6, 10, 22, tzinfo=UTC), "60s"),
        # 01:00 -> 02:00 is the only short gap; from 01:30 the next three fires are 02:00, 14:00, 01:00.
        ("0 1,2,14 * * *", 7200, datetime(2025, 1, 6, 1, 30, tzinfo=UTC), "3600s"),
    ],
)
def test_a_short_gap_anywhere_in_the_cycle_is_refused_whatever_the_time(
    monkeypatch: pytest.MonkeyPatch, expression: str, min_interval: int, now: datetime, every: str
) -> None:
    frozen_now(monkeypatch, now)
    with pytest.raises(InvalidArgument) as err:
        Cron.parse(expression, min_interval_seconds=min_interval)
    assert f"fires every {every}" in err.value.message


def test_intervals_at_the_limit_are_accepted() -> None:
    assert Cron.parse("* * * * *", min_interval_seconds=60).expression == "* * * * *"
    assert Cron.parse("* * * * * */2", min_interval_seconds=2).expression == "* * * * * */2"
    assert Cron.parse("0 3 1 1 *", min_interval_seconds=86_400).expression == "0 3 1 1 *"


@pytest.mark.parametrize("expression", ["0 0 30 2 *", "0 0 31 4 *"])
def test_a_cron_that_never_fires_is_refused_as_invalid(expression: str) -> None:
    with pytest.raises(InvalidArgument) as err:
        Cron.parse(expression)
    assert f"cron '{expression}' never fires" in err.value.message


def test_a_rare_cron_is_accepted() -> None:
    assert Cron.parse("0 0 29 2 *", min_interval_seconds=86_400).expression == "0 0 29 2 *"
