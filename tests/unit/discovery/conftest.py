"""Shared by the discovery tests: the shipped MiniLM model, loaded once per test run."""

from __future__ import annotations

import pytest

from jarvis.aggregator.discovery.embedding import Embedder


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    return Embedder()  # the model cache: built once per machine
