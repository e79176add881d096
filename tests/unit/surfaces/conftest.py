"""Fixtures of the surface tests: fresh in-memory backends per test, and a context over them."""

from __future__ import annotations

import pytest

from jarvis.aggregator.context import ToolContext
from tests.unit.surfaces.fakes import FakeRegistry, FakeRuntime, FakeScheduler, context


@pytest.fixture
def registry() -> FakeRegistry:
    return FakeRegistry()


@pytest.fixture
def runtime() -> FakeRuntime:
    return FakeRuntime()


@pytest.fixture
def scheduler() -> FakeScheduler:
    return FakeScheduler()


@pytest.fixture
def ctx(registry: FakeRegistry, runtime: FakeRuntime, scheduler: FakeScheduler) -> ToolContext:
    return context(registry, runtime=runtime, scheduler=scheduler)
