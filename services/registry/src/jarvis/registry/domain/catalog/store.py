"""Catalog use cases over the database: list, get, import files, load the bundled entries."""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from jarvis.common.errors import NotFound
from jarvis.registry.domain.catalog.formats import parse_catalog
from jarvis.registry.domain.records import CatalogEntry, Launch, Tool
from jarvis.registry.storage.database import Database
from jarvis.registry.storage.models import CatalogEntryRow, ServerRow

BUNDLED_SOURCE = "bundled"


@dataclass
class ImportResult:
    format: str
    imported: int = 0
    updated: int = 0
    names: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


class Catalog:
    def __init__(self, db: Database) -> None:
        self._db = db

    def list(self, limit: int = 0, offset: int = 0, category: str = "") -> tuple[list[CatalogEntry], int]:
        """A page of entries ordered by name, and the total matching `category` (case-insensitive)."""
        query = select(CatalogEntryRow)
        if category:
            query = query.where(func.lower(CatalogEntryRow.category) == category.strip().lower())
        with self._db.read() as session:
            total = session.scalar(select(func.count()).select_from(query.subquery())) or 0
            page = query.order_by(CatalogEntryRow.name).offset(max(offset, 0))
            if limit > 0:
                page = page.limit(limit)
            rows = session.scalars(page).all()
            installed = installed_catalog_names(session)
            return [entry_from_row(r, r.name in installed) for r in rows], total

    def get(self, name: str) -> CatalogEntry:
        with self._db.read() as session:
            row = find_entry(session, name)
            return entry_from_row(row, row.name in installed_catalog_names(session))

    def count(self) -> int:
        with self._db.read() as session:
            return session.scalar(select(func.count()).select_from(CatalogEntryRow)) or 0

    def import_file(self, content: bytes, source: str, fmt: str = "") -> ImportResult:
        """Add or update every readable entry in one transaction; report the others as skipped."""
        source = source.strip() or "import"
        parsed = parse_catalog(content, source, fmt)
        result = ImportResult(parsed.format, skipped=list(parsed.skipped))
        with self._db.write() as session:
            _upsert(session, parsed.entries, source, result, keep_foreign=False)
        return result

    def load_bundled(self) -> ImportResult:
        """Add or refresh the entries shipped with Jarvis; entries a user imported under the same name win."""
        content = resources.files(__package__).joinpath("bundled.json").read_bytes()
        parsed = parse_catalog(content, BUNDLED_SOURCE, "jarvis")
        result = ImportResult(parsed.format, skipped=list(parsed.skipped))
        with self._db.write() as session:
            _upsert(session, parsed.entries, BUNDLED_SOURCE, result, keep_foreign=True)
        return result


def _upsert(
    session: Session, entries: list[CatalogEntry], source: str, result: ImportResult, keep_foreign: bool
) -> None:
    """Insert new entries and overwrite existing ones; `keep_foreign` leaves other sources' entries alone."""
    existing = {
        row.name: row
        for row in session.scalars(select(CatalogEntryRow).where(CatalogEntryRow.name.in_([e.name for e in entries])))
    }
    seen: set[str] = set()
    for entry in entries:
        if entry.name in seen:
            result.skipped.append(f"{entry.name}: appears more than once in the file; the first one was used")
            continue
        seen.add(entry.name)
        row = existing.get(entry.name)
        if row is not None and keep_foreign and row.source != source:
            continue
        if row is None:
            row = CatalogEntryRow(name=entry.name)
            session.add(row)
            result.imported += 1
        else:
            result.updated += 1
        row.title, row.description, row.category = entry.title, entry.description, entry.category
        row.source, row.homepage = source, entry.homepage
        row.launch = entry.launch.to_json()
        row.required_env = list(entry.required_env)
        row.tools = [t.to_json() for t in entry.tools]
        result.names.append(entry.name)


def find_entry(session: Session, name: str) -> CatalogEntryRow:
    row = session.scalar(select(CatalogEntryRow).where(CatalogEntryRow.name == name.strip().lower()))
    if row is None:
        raise NotFound(
            f"catalog entry '{name}' not found; list entries with ListCatalog or find one with SearchServers"
        )
    return row


def installed_catalog_names(session: Session) -> set[str]:
    return set(session.scalars(select(ServerRow.catalog_name).where(ServerRow.catalog_name.is_not(None))))


def entry_from_row(row: CatalogEntryRow, installed: bool) -> CatalogEntry:
    return CatalogEntry(
        name=row.name,
        launch=Launch.from_json(row.launch),
        title=row.title,
        description=row.description,
        category=row.category,
        source=row.source,
        homepage=row.homepage,
        required_env=tuple(row.required_env),
        tools=tuple(Tool.from_json(t) for t in row.tools),
        installed=installed,
    )
