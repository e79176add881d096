"""`metrics_require_token` follows whether tokens are required unless set either way (issue 34)."""

from __future__ import annotations

import pytest

from jarvis.aggregator.settings import AggregatorSettings


@pytest.mark.parametrize(
    ("host", "require_auth", "setting", "required"),
    [
        ("127.0.0.1", None, None, False),  # loopback-open: /metrics open too
        ("127.0.0.1", True, None, True),  # --require-auth
        ("0.0.0.0", None, None, True),  # beyond loopback tokens are always required
        ("0.0.0.0", None, False, False),  # an explicit choice wins
        ("127.0.0.1", None, True, True),
    ],
)
def test_metrics_token_follows_auth_unless_set(
    host: str, require_auth: bool | None, setting: bool | None, required: bool
) -> None:
    settings = AggregatorSettings(host=host, require_auth=require_auth, metrics_require_token=setting)
    assert settings.metrics_token_required is required


def test_the_environment_sets_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JARVIS_AGGREGATOR_METRICS_REQUIRE_TOKEN", "true")
    assert AggregatorSettings().metrics_token_required is True
