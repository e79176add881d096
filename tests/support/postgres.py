"""The PostgreSQL tests use (CI has one at 127.0.0.1:5432): a fresh schema per test, dropped after."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest
from sqlalchemy.engine import make_url

DEFAULT_POSTGRES = "postgresql://postgres@127.0.0.1:5432/test"


def postgres_url() -> str:
    return os.environ.get("JARVIS_TEST_POSTGRES_URL", DEFAULT_POSTGRES)


def connect_admin() -> psycopg.Connection[Any]:
    """An autocommit connection for creating schemas. Unreachable: fail, never skip."""
    url = postgres_url()
    try:
        return psycopg.connect(url, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:
        pytest.fail(f"PostgreSQL at {url} is unreachable ({exc}); start it or set JARVIS_TEST_POSTGRES_URL")


@contextmanager
def postgres_schema(admin: psycopg.Connection[Any]) -> Iterator[str]:
    """A database URL whose search path is a new, empty schema."""
    schema = f"jarvis_test_{secrets.token_hex(6)}"
    admin.execute(f'CREATE SCHEMA "{schema}"')
    try:
        url = make_url(postgres_url()).update_query_dict({"options": f"-csearch_path={schema}"})
        yield url.render_as_string(hide_password=False)
    finally:
        admin.execute(f'DROP SCHEMA "{schema}" CASCADE')


@contextmanager
def fresh_postgres_url() -> Iterator[str]:
    """A database URL on a new, empty schema, with its own admin connection."""
    admin = connect_admin()
    try:
        with postgres_schema(admin) as url:
            yield url
    finally:
        admin.close()
