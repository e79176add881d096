"""DATABASE_PASSWORD_FILE: the password comes from a secret file, never from a URL in an env file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError
from sqlalchemy.engine import make_url

from jarvis.common.settings import describe_invalid_settings
from jarvis.registry.settings import RegistrySettings
from jarvis.runtime.settings import RuntimeSettings
from jarvis.scheduler.settings import SchedulerSettings

URL = "postgresql://jarvis@postgres:5432/jarvis"


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    path = tmp_path / "db_password"
    path.write_text("p@ss:w/rd%\n")  # characters a URL must escape; the file's trailing newline is not part of it
    return path


@pytest.mark.parametrize("settings_class", [RegistrySettings, RuntimeSettings, SchedulerSettings])
def test_each_database_service_builds_its_url_from_the_file(
    settings_class: type[RegistrySettings | RuntimeSettings | SchedulerSettings],
    secret: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DATABASE_URL", URL)
    monkeypatch.setenv("DATABASE_PASSWORD_FILE", str(secret))
    settings = settings_class(data_dir=tmp_path)
    parsed = make_url(settings.database_url)
    assert (parsed.username, parsed.password, parsed.host, parsed.database) == (
        "jarvis",
        "p@ss:w/rd%",
        "postgres",
        "jarvis",
    )


def test_the_runtime_instance_does_not_change_when_the_password_rotates(secret: Path, tmp_path: Path) -> None:
    first = RuntimeSettings(data_dir=tmp_path, database_url=URL, database_password_file=secret).instance
    secret.write_text("rotated")
    assert RuntimeSettings(data_dir=tmp_path, database_url=URL, database_password_file=secret).instance == first


@pytest.mark.parametrize(
    ("url", "content", "message"),
    [
        (URL, None, "cannot be read"),
        (URL, "", "is empty"),
        ("postgresql://jarvis:inline@postgres/jarvis", "x", "remove the password from the URL"),
        ("not a url", "x", "not a valid SQLAlchemy URL"),
    ],
)
def test_a_bad_password_setup_names_what_to_fix(url: str, content: str | None, message: str, tmp_path: Path) -> None:
    path = tmp_path / "db_password"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ValidationError) as caught:
        RegistrySettings(data_dir=tmp_path, database_url=url, database_password_file=path)
    described = describe_invalid_settings(caught.value)
    assert message in described
    assert "inline" not in described  # what a process prints never echoes a password


def test_sqlite_and_unset_files_are_left_alone(secret: Path, tmp_path: Path) -> None:
    assert RegistrySettings(data_dir=tmp_path, database_password_file=secret).database_url.startswith("sqlite:///")
    assert RegistrySettings(data_dir=tmp_path, database_url=URL).database_url == URL


def test_serve_with_an_unreadable_password_file_exits_with_the_setting_to_fix(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "DATABASE_URL": URL,
        "DATABASE_PASSWORD_FILE": str(tmp_path / "missing"),
        "JARVIS_REGISTRY_DATA_DIR": str(tmp_path),
    }
    done = subprocess.run(
        [sys.executable, "-m", "jarvis.cli", "serve", "registry"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert f"DATABASE_PASSWORD_FILE={tmp_path / 'missing'} cannot be read" in done.stderr
    assert "Traceback" not in done.stderr
