"""The git environment of tests: a fixed identity, and none of the developer's own git config."""

from __future__ import annotations

import os

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Jarvis Test",
    "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "Jarvis Test",
    "GIT_COMMITTER_EMAIL": "test@example.invalid",
    # Keep the developer's own git config (hooks, signing, default branch) out of the tests.
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}

# For git run with nothing else from the caller's environment (the runtime tests' sources).
BARE_GIT_ENV = {**GIT_ENV, "PATH": "/usr/bin:/bin", "HOME": "/nonexistent"}
