"""JARVIS_TRUSTED_PROXIES: the proxies whose forwarded headers uvicorn believes, none by default (issue 44 finding 10;
tests/e2e/test_oauth_register_limit.py runs both ways)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from jarvis.aggregator.settings import AggregatorSettings


def test_none_are_trusted_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JARVIS_TRUSTED_PROXIES", raising=False)
    assert AggregatorSettings().proxies == []


def test_entries_are_written_as_uvicorn_reads_them(monkeypatch: pytest.MonkeyPatch) -> None:
    # uvicorn parses a network strictly and takes what it cannot parse for a name that never matches.
    monkeypatch.setenv("JARVIS_TRUSTED_PROXIES", " 10.1.2.3/8, 127.0.0.1,,::1 ")
    assert AggregatorSettings().proxies == ["10.0.0.0/8", "127.0.0.1", "::1"]


@pytest.mark.parametrize("entry", ["proxy.internal", "*", "10.0.0.0/33"])
def test_anything_but_an_address_or_a_network_is_refused(monkeypatch: pytest.MonkeyPatch, entry: str) -> None:
    monkeypatch.setenv("JARVIS_TRUSTED_PROXIES", entry)
    with pytest.raises(ValidationError, match="JARVIS_TRUSTED_PROXIES"):
        AggregatorSettings()
