"""Server factory: open the scheduler from settings and bind its gRPC API; in embedded mode its beat runs too."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from jarvis.api.scheduler.v1 import scheduler_pb2_grpc as pb_grpc
from jarvis.common.grpc_server import ServiceBinding
from jarvis.common.service import Bindings
from jarvis.scheduler.adapters.embedded import LocalBeat, LocalDispatcher
from jarvis.scheduler.app import Scheduler
from jarvis.scheduler.domain.ports import Dispatcher
from jarvis.scheduler.servicer import SchedulerServicer
from jarvis.scheduler.settings import SchedulerSettings

SCHEDULER_SERVICE = "jarvis.api.scheduler.v1.SchedulerService"
EMBEDDED, CELERY = "embedded", "celery"


def _dispatcher(settings: SchedulerSettings) -> Dispatcher:
    if settings.embedded:
        return LocalDispatcher(settings.embedded_workers)
    # Imported here: the embedded mode never loads Celery.
    from jarvis.scheduler.adapters.celery_app import CeleryDispatcher, create_celery_app

    return CeleryDispatcher(create_celery_app(settings), settings)


def build(settings: SchedulerSettings, metrics: CollectorRegistry) -> Bindings:
    """The scheduler's API over the dispatcher `settings` choose: Celery on Redis, or (no Redis) a local thread pool
    fired by an in-process beat that starts once the API serves."""
    dispatcher = _dispatcher(settings)
    scheduler = Scheduler.open(settings, dispatcher, metrics)
    local = dispatcher if isinstance(dispatcher, LocalDispatcher) else None
    beat: list[LocalBeat] = []  # embedded mode only; Celery beat runs as its own process otherwise

    def serving() -> None:
        if local is not None:
            local.bind(scheduler.executor.execute)
            beat.append(LocalBeat(scheduler.beat, settings.beat_interval_seconds, settings.sweep_seconds))
            beat[0].start()

    def close() -> None:
        for timer in beat:
            timer.stop()
        if local is not None:
            local.close()
        scheduler.close()

    ping = getattr(dispatcher, "ping_workers", None)  # only Celery has workers to ask
    return Bindings(
        services=[
            ServiceBinding(
                add_to_server=pb_grpc.add_SchedulerServiceServicer_to_server,
                servicer=SchedulerServicer(scheduler.schedules, EMBEDDED if local else CELERY, ping),
                full_name=SCHEDULER_SERVICE,
            )
        ],
        serving=serving,
        close=close,
        describe={"mode": EMBEDDED if local else CELERY, "runtime_target": settings.runtime_target},
    )
