"""The protocols `ToolContext` is typed with describe the real gateways: mypy checks that they satisfy them (here and
where app.py builds the context), and this checks that each protocol method is the gateway's own signature, so a
fake written against a protocol takes exactly what the gateway takes."""

from __future__ import annotations

import inspect

import pytest

from jarvis.aggregator.gateways.debug import DebugGateway
from jarvis.aggregator.gateways.protocols import DebugApi, RegistryApi, RuntimeApi, SchedulerApi, ServiceApi
from jarvis.aggregator.gateways.registry import RegistryGateway
from jarvis.aggregator.gateways.runtime import RuntimeGateway
from jarvis.aggregator.gateways.scheduler import SchedulerGateway
from jarvis.aggregator.surfaces.admin import build_admin_surface
from jarvis.aggregator.surfaces.debug import build_debug_surface
from jarvis.aggregator.surfaces.jarvis import build_jarvis_surface
from jarvis.aggregator.surfaces.orchestrator import build_orchestrator_surface
from tests.unit.surfaces.fakes import FakeDebug, FakeRegistry, FakeRuntime, FakeScheduler, context

PAIRS = [
    (RegistryApi, RegistryGateway, FakeRegistry),
    (RuntimeApi, RuntimeGateway, FakeRuntime),
    (SchedulerApi, SchedulerGateway, FakeScheduler),
    (DebugApi, DebugGateway, FakeDebug),
]


def _gateways_satisfy_the_protocols(
    registry: RegistryGateway, runtime: RuntimeGateway, scheduler: SchedulerGateway, debug: DebugGateway
) -> tuple[RegistryApi, RuntimeApi, SchedulerApi, DebugApi]:
    """Never called: mypy refuses this function if a gateway stops satisfying its protocol."""
    return registry, runtime, scheduler, debug


def methods(protocol: type) -> list[str]:
    return sorted(
        name
        for name in dir(protocol)
        if not name.startswith("_") and inspect.isfunction(getattr(protocol, name)) and not hasattr(ServiceApi, name)
    )


@pytest.mark.parametrize(("protocol", "gateway", "fake"), PAIRS, ids=lambda x: getattr(x, "__name__", ""))
def test_each_protocol_method_is_the_gateways_own(protocol: type, gateway: type, fake: type) -> None:
    assert methods(protocol), protocol
    for name in methods(protocol):
        expected = inspect.signature(getattr(gateway, name))
        assert inspect.signature(getattr(protocol, name)) == expected, f"{protocol.__name__}.{name}"
        assert inspect.iscoroutinefunction(getattr(fake, name)), f"{fake.__name__}.{name}"


def test_the_protocols_leave_out_what_no_handler_calls() -> None:
    """The stubs, the usage sink and the server pipe stay the host's, not the handlers'."""
    assert "record_usage" not in methods(RegistryApi)
    assert "verify_token" not in methods(RegistryApi)
    assert "attach_server" not in methods(RuntimeApi)
    assert "close" not in dir(ServiceApi)


def test_every_surface_builds_over_the_fakes() -> None:
    ctx = context(FakeRegistry(), runtime=FakeRuntime(), scheduler=FakeScheduler(), debug=FakeDebug())
    built = [build_jarvis_surface(ctx), build_orchestrator_surface(ctx), build_debug_surface(ctx)]
    built.append(build_admin_surface(ctx))
    assert [s.name for s in built] == ["jarvis", "orchestrator", "debug", "admin"]
    # The tools specs 000, 001 and 002 name; people and roles apart, on a surface of admin actions (decision 0069).
    assert [len(s.tools) for s in built[:3]] == [8, 12, 1]
    admin = built[3]
    assert {"user", "role"} <= {t.name for t in admin.tools}
    assert all(action.admin for tool in admin.tools for action in tool.actions)
