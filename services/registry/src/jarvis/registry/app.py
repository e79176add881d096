"""The registry's composition root: one object owning the database and every use case."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from cryptography.fernet import MultiFernet

from jarvis.common.errors import AlreadyExists, InvalidArgument
from jarvis.common.fernet_keys import load_keys
from jarvis.registry.domain.bootstrap import BootstrapResult, bootstrap
from jarvis.registry.domain.catalog.store import Catalog
from jarvis.registry.domain.client_links import ClientLinks
from jarvis.registry.domain.clients import ClientManager
from jarvis.registry.domain.config.store import ConfigFile
from jarvis.registry.domain.doctor import Check, doctor
from jarvis.registry.domain.oauth_records import OAuthRecords
from jarvis.registry.domain.pins import Pins
from jarvis.registry.domain.profiles import Profiles
from jarvis.registry.domain.search import Document, Hit, search
from jarvis.registry.domain.servers import Servers
from jarvis.registry.domain.suggestions import Suggestions, suggest_for_project
from jarvis.registry.domain.tokens import Tokens
from jarvis.registry.domain.usage import Usage
from jarvis.registry.domain.vault import KEY_FILE, Vault
from jarvis.registry.settings import RegistrySettings
from jarvis.registry.storage.database import Database
from jarvis.registry.storage.migrate import upgrade_to_head


def installed_jarvis() -> str:
    """The absolute `jarvis` of this install (a venv's is not on PATH), for stdio client entries."""
    beside = Path(sys.executable).parent / "jarvis"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("jarvis") or "jarvis"


VAULT_SETTING = "JARVIS_REGISTRY_VAULT_KEY"


class Registry:
    """Use cases over one database, one config file and the user's MCP client configs."""

    def __init__(
        self,
        db: Database,
        data_dir: Path,
        home: Path,
        project_roots: Sequence[Path] | None = None,
        served_url: str = "",
        vault_keys: Callable[[], MultiFernet] | None = None,
    ) -> None:
        self.db = db
        self.data_dir = data_dir
        self.project_roots = list(project_roots) if project_roots is not None else [home]
        # Unless an admin set aggregator_url for the team, it is the URL this instance serves.
        self.config = ConfigFile(data_dir / "config.json", {"aggregator_url": served_url} if served_url else {})
        jarvis_command = installed_jarvis()

        def client_manager() -> ClientManager:
            # Built per call so a changed aggregator_url applies at once.
            return ClientManager(
                data_dir,
                home,
                str(self.config.value("aggregator_url")),
                jarvis_command=jarvis_command,
                jarvis_data_dir=str(data_dir),
            )

        self.catalog = Catalog(db)
        self.servers = Servers(db, client_manager, default_directories=self.project_roots)
        self.profiles = Profiles(db, client_manager)
        self.clients = ClientLinks(client_manager, self.servers, self.profiles, self.config)
        self.tokens = Tokens(db)
        self.usage = Usage(db, retention_days=lambda: int(self.config.value("audit.retention_days")))
        self.pins = Pins(db)
        self.oauth = OAuthRecords(db)
        self.vault = Vault(
            db, vault_keys or (lambda: load_keys("", None, data_dir, setting=VAULT_SETTING, file_name=KEY_FILE))
        )

    @classmethod
    def open(cls, settings: RegistrySettings) -> Registry:
        """Connect, bring the schema to the newest revision and make sure the bundled catalog is loaded."""
        db = Database.from_url(settings.database_url)
        try:
            upgrade_to_head(db.engine)
            registry = cls(
                db,
                settings.data_dir,
                settings.home,
                settings.project_roots,
                settings.aggregator_url,
                lambda: load_keys(
                    settings.vault_key.get_secret_value(),
                    settings.vault_key_file,
                    settings.data_dir,
                    setting=VAULT_SETTING,
                    file_name=KEY_FILE,
                ),
            )
            # A replica starting at the same moment may insert the same bundled entries first.
            with contextlib.suppress(AlreadyExists):
                registry.catalog.load_bundled()
        except BaseException:
            db.close()
            raise
        return registry

    def search(self, query: str, limit: int = 0, installed_only: bool = False) -> list[Hit]:
        """Installed servers and (unless installed_only) catalog entries not installed yet."""
        docs = [Document(s.name, s.description, True, s.tools) for s in self.servers.list()]
        if not installed_only:
            entries, _ = self.catalog.list()
            docs += [Document(e.name, e.description, False, e.tools, e.title) for e in entries if not e.installed]
        return search(query, docs, limit)

    def suggest_profiles(self, project_dir: str) -> Suggestions:
        if not project_dir.strip():
            raise InvalidArgument("suggesting profiles needs project_dir: the directory of the project to analyse")
        entries, _ = self.catalog.list()
        return suggest_for_project(
            Path(project_dir).expanduser(),
            self.servers.list(),
            entries,
            {p.name for p in self.profiles.list()},
            [c.name for c in self.clients.list() if c.detected],
            allowed_roots=self.project_roots,
        )

    def bootstrap(self, restore: bool = False) -> BootstrapResult:
        return bootstrap(self.db, self.catalog, self.servers, self.profiles, self.config, restore)

    def doctor(self) -> list[Check]:
        return doctor(self.db, self.catalog, self.config, self.data_dir)

    def close(self) -> None:
        self.db.close()
