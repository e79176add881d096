"""`db_bridge`: the application's SQLite database — read-only queries, schema, seeding.

`query` cannot write, three ways over: the file is opened through a `mode=ro` URI (SQLite
refuses every write), `PRAGMA query_only` is set, and an authorizer denies every operation
except reading (so ATTACH, PRAGMA, temp tables and writes fail at prepare time). `schema` uses
the same read-only connection. `seed` is the one writer: it runs the seed SQL inside a single
transaction it controls, and rolls everything back on the first error.
"""

from __future__ import annotations

import base64
import sqlite3
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

from project_mcp_server.config import ServerConfig, resolve_inside
from project_mcp_server.tools.base import InvalidParams, ToolDef, ToolError, builtin

MAX_ROWS = 500
QUERY_SECONDS = 10.0
_READ_ONLY_OPS = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE}
_SEED_DENIED = {sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH, sqlite3.SQLITE_TRANSACTION}


def _read_only_authorizer(action: int, *_: object) -> int:
    return sqlite3.SQLITE_OK if action in _READ_ONLY_OPS else sqlite3.SQLITE_DENY


def _seed_authorizer(action: int, *_: object) -> int:
    # The seed runs in our transaction and on this database only.
    return sqlite3.SQLITE_DENY if action in _SEED_DENIED else sqlite3.SQLITE_OK


def _database(config: ServerConfig) -> Path:
    if config.database is None:
        raise ToolError("no database is configured; set 'database' in mcp-server/project-server.toml")
    return config.database


def _connect_read_only(path: Path) -> sqlite3.Connection:
    if not path.is_file():
        raise ToolError(f"database {path.name} does not exist yet; seed it first (action 'seed')")
    conn = sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True, timeout=5.0, isolation_level=None)
    conn.execute("PRAGMA query_only = ON")
    deadline = time.monotonic() + QUERY_SECONDS
    conn.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)  # non-zero aborts the query
    return conn


def _cell(value: Any) -> Any:
    return {"base64": base64.b64encode(value).decode()} if isinstance(value, bytes) else value


def query(config: ServerConfig, sql: str) -> dict[str, Any]:
    """Run one read-only statement; at most MAX_ROWS rows come back."""
    if not sql.strip():
        raise InvalidParams("payload must be the SQL statement to run")
    conn = _connect_read_only(_database(config))
    try:
        conn.set_authorizer(_read_only_authorizer)
        cursor = conn.execute(sql)
        rows = cursor.fetchmany(MAX_ROWS + 1)
        columns = [d[0] for d in cursor.description or ()]
    except (sqlite3.DatabaseError, sqlite3.ProgrammingError, sqlite3.Warning) as exc:
        raise ToolError(f"query refused or failed (query is read-only, one statement): {exc}") from None
    finally:
        conn.close()
    return {
        "action": "query",
        "columns": columns,
        "rows": [[_cell(v) for v in row] for row in rows[:MAX_ROWS]],
        "row_count": min(len(rows), MAX_ROWS),
        "truncated": len(rows) > MAX_ROWS,
    }


def schema(config: ServerConfig, table: str) -> dict[str, Any]:
    """Tables and views with their columns and indexes (all of them for '' or '*', or the one named)."""
    table = "" if table.strip() == "*" else table.strip()
    conn = _connect_read_only(_database(config))
    try:
        objects = conn.execute(
            "SELECT name, type FROM sqlite_schema WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%' "
            "AND (? = '' OR name = ?) ORDER BY name",
            (table, table),
        ).fetchall()
        if table and not objects:
            raise ToolError(f"no table or view named '{table}'")
        tables = []
        for name, kind in objects:
            columns = [
                {"name": c[1], "type": c[2], "not_null": bool(c[3]), "default": c[4], "primary_key": c[5]}
                for c in conn.execute("SELECT * FROM pragma_table_info(?)", (name,))
            ]
            indexes = [i[0] for i in conn.execute("SELECT name FROM pragma_index_list(?)", (name,))]
            tables.append({"name": name, "type": kind, "columns": columns, "indexes": indexes})
    finally:
        conn.close()
    return {"action": "schema", "tables": tables}


def _statements(script: str) -> list[str]:
    """Split a script into complete statements (semicolons inside strings and triggers stay put)."""
    statements, buffer = [], ""
    for piece in script.split(";"):
        buffer += piece + ";"
        if sqlite3.complete_statement(buffer):
            statements.append(buffer.strip())
            buffer = ""
    leftover = buffer.removesuffix(";").strip()
    return [s for s in statements if s.strip(" ;\n\t")] + ([leftover] if leftover else [])


def _seed_source(config: ServerConfig, payload: str) -> tuple[str, str]:
    """(label, SQL): the configured seed file, a `.sql` file in the project, or inline SQL."""
    text = payload.strip()
    looks_like_file = text.endswith(".sql") and not any(c in text for c in " \t\n;")
    if text and not looks_like_file:
        return "inline", payload
    if not text and config.seed_file is None:
        raise InvalidParams("payload is empty and no seed_file is configured")
    try:
        path = resolve_inside(config.root, text) if text else config.seed_file
    except ValueError as exc:
        raise InvalidParams(f"seed file {exc}") from None
    assert path is not None
    if not path.is_file():
        raise InvalidParams(f"seed file '{config.relative(path)}' does not exist")
    return config.relative(path), path.read_text(encoding="utf-8")


def seed(config: ServerConfig, payload: str) -> dict[str, Any]:
    """Run seed SQL in one transaction (creating the database file if needed)."""
    label, script = _seed_source(config, payload)
    path = _database(config)
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(f"file:{quote(str(path))}?mode=rwc", uri=True, timeout=5.0, isolation_level=None)
    statements = _statements(script)
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.set_authorizer(_seed_authorizer)
        for number, statement in enumerate(statements, 1):
            try:
                conn.execute(statement)
            except sqlite3.Error as exc:
                conn.set_authorizer(None)
                conn.execute("ROLLBACK")
                raise ToolError(f"seed statement {number} failed, nothing was applied: {exc}") from None
        conn.set_authorizer(None)
        changes = conn.total_changes
        conn.execute("COMMIT")
    finally:
        conn.close()
    return {"action": "seed", "source": label, "statements": len(statements), "changes": changes}


def tool(config: ServerConfig) -> ToolDef:
    """The `db_bridge` tool for this project's database."""
    actions = {"query": query, "schema": schema, "seed": seed}
    return builtin("db_bridge", lambda args: actions[args["action"]](config, args["payload"]), read_only=False)
