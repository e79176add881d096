"""Names and launch specs: the naming rule, each transport's fields, SSRF refusal."""

from __future__ import annotations

import pytest

from jarvis.common.errors import InvalidArgument
from jarvis.registry.domain.launch import validate_launch, validate_url
from jarvis.registry.domain.names import slugify, validate_name
from jarvis.registry.domain.records import Launch


@pytest.mark.parametrize(("raw", "name"), [("GitHub", "github"), ("a.b_c-d", "a.b_c-d"), ("x" * 63, "x" * 63)])
def test_valid_names_are_lowered(raw: str, name: str) -> None:
    assert validate_name(raw, "server") == name


@pytest.mark.parametrize("raw", ["", "-x", "a b", "x" * 64, "ünï", "a/b"])
def test_invalid_names_state_the_rule(raw: str) -> None:
    with pytest.raises(InvalidArgument, match="lowercase letters, digits"):
        validate_name(raw, "server")


def test_slugify() -> None:
    assert slugify("Ant Design Components") == "ant-design-components"
    assert slugify("Asset_Price_MCP") == "asset_price_mcp"
    assert slugify("!!!") is None


@pytest.mark.parametrize(
    ("launch", "message"),
    [
        (Launch("stdio"), "a stdio server needs a command"),
        (Launch("container"), "a container server needs an image"),
        (Launch("streamable-http"), "a streamable-http server needs a url"),
        (Launch("stdio", command="x", url="https://a.example"), "url does not apply to a stdio server"),
        (Launch("streamable-http", url="https://a.example", env={"A": "1"}), "env does not apply"),
        (Launch("stdio", command="x", env={"BAD-NAME": "1"}), "invalid environment variable name"),
    ],
)
def test_launch_needs_its_transport_fields(launch: Launch, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        validate_launch(launch)


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data",
        "http://[fe80::1]/mcp",
        "http://[::ffff:169.254.169.254]/",
        "http://2852039166/",
        "http://0xA9FEA9FE/",
        "http://metadata.google.internal/computeMetadata/v1/",
        "http://[fd00:ec2::254]/",
        "http://0.0.0.0:80/",
    ],
)
def test_ssrf_addresses_are_refused(url: str) -> None:
    with pytest.raises(InvalidArgument, match="SSRF"):
        validate_url(url)


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://x.example/", "https:///nohost", "not a url"])
def test_non_http_urls_are_refused(url: str) -> None:
    with pytest.raises(InvalidArgument, match="http:// or https://"):
        validate_url(url)


@pytest.mark.parametrize("url", ["http://127.0.0.1:8080/mcp", "https://mcp.example.com/mcp", "http://10.1.2.3/mcp"])
def test_ordinary_urls_are_accepted(url: str) -> None:
    assert validate_url(url) == url
