"""`jarvis up`'s banner points clients at the default surface, and says how to get a token where one is needed."""

from __future__ import annotations

from jarvis.cli.banner import banner

SURFACES = [("discovery", "/mcp"), ("jarvis", "/mcp/jarvis")]


def test_an_open_loopback_jarvis_needs_no_token_and_points_at_the_default_surface() -> None:
    lines = banner("/d", "http://127.0.0.1:8765", SURFACES, auth_required=False)
    text = "\n".join(lines)
    assert "claude mcp add --transport http jarvis http://127.0.0.1:8765/mcp\n" in text + "\n"
    assert "token" not in text.split("Connect a client")[1]
    assert "  MCP jarvis       http://127.0.0.1:8765/mcp/jarvis" in lines


def test_a_jarvis_that_requires_tokens_prints_lines_that_work_with_one() -> None:
    text = "\n".join(banner("/d", "http://127.0.0.1:8765", SURFACES, auth_required=True))
    assert "auth: token required" in text
    assert "jarvis token create" in text
    assert '--header "Authorization: Bearer $JARVIS_TOKEN"' in text
    assert '"headers": {"Authorization": "Bearer <the secret>"}' in text


def test_with_sign_in_the_banner_says_where_people_log_in() -> None:
    issuer = "https://id.example.com/realms/team"
    text = "\n".join(banner("/d", "http://127.0.0.1:8765", SURFACES, auth_required=True, sign_in=issuer))
    assert f"People sign in at {issuer}" in text
    assert "claude mcp add --transport http jarvis http://127.0.0.1:8765/mcp   (then /mcp" in text
    assert "Or with a token (machines, scripts):" in text
    assert "jarvis token create" in text
