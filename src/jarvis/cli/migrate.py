"""`jarvis migrate`: bring every service's schema to the newest revision, once, before the services roll out.

A deployment runs it as a one-off (the Kubernetes `jarvis-migrate` Job). Services still check at start and
migrate under a PostgreSQL advisory lock if they find an older schema, so the order never matters and no DDL
runs twice; running this first only keeps schema changes out of the services' start and makes a failure show
in one place.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click
from pydantic import ValidationError

if TYPE_CHECKING:
    from jarvis.common.sql.migrate import Migrations


def _targets() -> list[tuple[str, str, Migrations]]:
    """(service, database URL, its migrations), each URL from that service's own settings (env, password file)."""
    from jarvis.registry.settings import RegistrySettings
    from jarvis.registry.storage.migrate import MIGRATIONS as REGISTRY
    from jarvis.runtime.settings import RuntimeSettings
    from jarvis.runtime.storage.migrate import MIGRATIONS as RUNTIME
    from jarvis.scheduler.settings import SchedulerSettings
    from jarvis.scheduler.storage.migrate import MIGRATIONS as SCHEDULER

    return [
        ("registry", RegistrySettings().database_url, REGISTRY),
        ("runtime", RuntimeSettings().database_url, RUNTIME),
        ("scheduler", SchedulerSettings().database_url, SCHEDULER),
    ]


@click.command()
def migrate() -> None:
    """Upgrade the registry's, runtime's and scheduler's schemas (DATABASE_URL) to their newest revisions."""
    # Imported here: `jarvis --help` should not pay for SQLAlchemy.
    from sqlalchemy.exc import SQLAlchemyError

    from jarvis.common.settings import describe_invalid_settings
    from jarvis.common.sql.database import Database

    try:
        targets = _targets()
    except ValidationError as exc:
        raise click.ClickException(describe_invalid_settings(exc)) from None
    for service, url, migrations in targets:
        db = Database.from_url(url)
        try:
            before, after = migrations.upgrade_to_head(db.engine)
        except SQLAlchemyError as exc:
            # The driver's own message (host, port, reason); SQLAlchemy's wrapper adds the SQL, never the password.
            reason = str(getattr(exc, "orig", None) or exc).splitlines()[0]
            raise click.ClickException(f"{service}: cannot migrate the database of DATABASE_URL: {reason}") from None
        finally:
            db.close()
        change = "already at" if before == after else f"{before or 'empty'} ->"
        click.echo(f"{service}: {change} {after}")


if __name__ == "__main__":
    migrate()
