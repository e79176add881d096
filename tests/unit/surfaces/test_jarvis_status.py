"""`jarvis_check_status` over fake services: healthy only when nothing configured is down."""

from __future__ import annotations

import pytest

from jarvis.aggregator.surfaces.jarvis import status
from jarvis.aggregator.tooling.principal import LOCAL_ADMIN
from jarvis.aggregator.views.registry import DoctorCheckView
from jarvis.aggregator.views.scheduler import SchedulerStatus
from jarvis.common.errors import Unavailable
from tests.unit.surfaces.fakes import NOT_SERVING, FakeDebug, FakeRegistry, FakeRuntime, FakeScheduler, context

pytestmark = pytest.mark.anyio


async def check(
    registry: FakeRegistry,
    runtime: FakeRuntime | None = None,
    scheduler: FakeScheduler | None = None,
    debug: FakeDebug | None = None,
) -> status.Status:
    ctx = context(registry, runtime=runtime, scheduler=scheduler, debug=debug)
    result: status.Status = await status.build(ctx).call({}, LOCAL_ADMIN, "jarvis")
    return result


async def test_everything_up_is_healthy(registry: FakeRegistry, runtime: FakeRuntime, scheduler: FakeScheduler) -> None:
    report = await check(registry, runtime, scheduler, FakeDebug())
    assert report.healthy is True
    assert {name: s["ok"] for name, s in report.services.items()} == {
        "registry": True,
        "runtime": True,
        "scheduler": True,
        "debug": True,
    }
    assert report.daemons["docker"]["ok"] is True
    assert report.aggregator.mode == "test"
    assert report.warnings == []


async def test_services_a_deployment_lacks_do_not_make_it_unhealthy(registry: FakeRegistry) -> None:
    report = await check(registry)
    assert report.healthy is True
    assert report.services["runtime"] == {"ok": None, "detail": "not part of this deployment"}
    assert report.daemons["docker"]["ok"] is None
    assert report.downstream.hosted is False


async def test_a_service_that_is_down_makes_it_unhealthy(registry: FakeRegistry, runtime: FakeRuntime) -> None:
    runtime.health = NOT_SERVING
    report = await check(registry, runtime)
    assert report.healthy is False
    assert report.services["runtime"] == NOT_SERVING
    assert report.services["registry"]["ok"] is True


async def test_docker_unreachable_through_the_runtime_makes_it_unhealthy(
    registry: FakeRegistry, runtime: FakeRuntime
) -> None:
    runtime.docker_reachable = False
    report = await check(registry, runtime)
    assert report.healthy is False
    assert report.daemons["docker"]["ok"] is False
    assert report.daemons["docker"]["via"] == "runtime"


async def test_a_scheduler_whose_queue_is_unreachable_is_down(registry: FakeRegistry, scheduler: FakeScheduler) -> None:
    scheduler.status = SchedulerStatus("celery", 1, 1, {}, -1, "", 2, "2 workers")
    report = await check(registry, scheduler=scheduler)
    assert report.healthy is False
    assert report.services["scheduler"]["ok"] is False
    assert report.services["scheduler"]["queue_depth"] == -1
    assert report.daemons["celery"]["ok"] is True


async def test_an_advisory_doctor_check_warns_but_a_failing_one_is_unhealthy(registry: FakeRegistry) -> None:
    registry.doctor_checks = [DoctorCheckView("data_dir", False, "chmod 700 ~/.jarvis")]
    report = await check(registry)
    assert report.healthy is True
    assert report.warnings == ["data_dir: chmod 700 ~/.jarvis"]

    registry.doctor_checks = [DoctorCheckView("migrations", False, "2 pending")]
    report = await check(registry)
    assert report.healthy is False
    assert report.warnings == []


async def test_a_registry_that_cannot_run_its_doctor_is_reported_as_a_failed_check(registry: FakeRegistry) -> None:
    registry.doctor_error = Unavailable("the registry at memory:registry did not answer")
    report = await check(registry)
    assert report.healthy is False
    assert report.doctor == [DoctorCheckView("registry", False, "the registry at memory:registry did not answer")]
