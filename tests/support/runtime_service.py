"""Settings of a real runtime service for tests: the fake-agent image on the private Docker engine."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from jarvis.runtime.settings import RuntimeSettings
from tests.support.docker_env import docker_host

# A fixed Fernet key: tests are deployed-mode runtimes, which must be given one.
TEST_SECRETS_KEY = "S2V5LWZvci1qYXJ2aXMtdGVzdHMtb25seS0wMTIzNDU="


def runtime_settings(data_dir: Path, image: str, **overrides: Any) -> RuntimeSettings:
    values: dict[str, Any] = {
        "data_dir": data_dir,
        "image": image,
        "agent_command": ["fake-agent"],
        "docker_host": docker_host(),
        "session_end_grace_seconds": 2,
        "exec_timeout_seconds": 20,
        "memory": "128m",
        "pids": 64,
        "project_roots": [Path(tempfile.gettempdir())],  # the tests' source repositories live in tmp_path
        "secrets_key": TEST_SECRETS_KEY,
    }
    values.update(overrides)
    return RuntimeSettings(**values)
