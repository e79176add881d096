"""Server factory: open the scheduler from settings, serve its gRPC API, and in embedded mode run beat too."""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import CollectorRegistry

from jarvis.api.scheduler.v1 import scheduler_pb2_grpc as pb_grpc
from jarvis.common.grpc_server import RunningServer, ServiceBinding, create_server
from jarvis.common.metrics import GrpcMetrics
from jarvis.scheduler.adapters.embedded import LocalBeat, LocalDispatcher
from jarvis.scheduler.core import SchedulerCore
from jarvis.scheduler.domain.ports import Dispatcher
from jarvis.scheduler.servicer import SchedulerServicer
from jarvis.scheduler.settings import SchedulerSettings

SCHEDULER_SERVICE = "jarvis.api.scheduler.v1.SchedulerService"
EMBEDDED, CELERY = "embedded", "celery"


@dataclass
class RunningScheduler:
    core: SchedulerCore
    server: RunningServer
    beat: LocalBeat | None  # embedded mode only; Celery beat runs as its own process otherwise
    local: LocalDispatcher | None

    @property
    def port(self) -> int:
        return self.server.port

    def stop(self, grace: float = 5.0) -> None:
        self.server.stop(grace)
        if self.beat is not None:
            self.beat.stop()
        if self.local is not None:
            self.local.close()
        self.core.close()


def _dispatcher(settings: SchedulerSettings) -> Dispatcher:
    if settings.embedded:
        return LocalDispatcher(settings.embedded_workers)
    # Imported here: the embedded mode never loads Celery.
    from jarvis.scheduler.adapters.celery_app import CeleryDispatcher, create_celery_app

    return CeleryDispatcher(create_celery_app(settings), settings)


def serve_scheduler(
    settings: SchedulerSettings, registry: CollectorRegistry, metrics: GrpcMetrics | None, address: str | None = None
) -> RunningScheduler:
    dispatcher = _dispatcher(settings)
    core = SchedulerCore.open(settings, dispatcher, registry)
    local = dispatcher if isinstance(dispatcher, LocalDispatcher) else None
    try:
        ping = getattr(dispatcher, "ping_workers", None)  # only Celery has workers to ask
        binding = ServiceBinding(
            add_to_server=pb_grpc.add_SchedulerServiceServicer_to_server,
            servicer=SchedulerServicer(core.schedules, EMBEDDED if local else CELERY, ping),
            full_name=SCHEDULER_SERVICE,
        )
        server = create_server([binding], address or settings.listen, metrics=metrics, plane=settings.internal_plane())
    except BaseException:
        core.close()
        raise
    beat = None
    if local is not None:
        local.bind(core.executor.execute)
        beat = LocalBeat(core.beat, settings.beat_interval_seconds, settings.sweep_seconds)
        beat.start()
    return RunningScheduler(core=core, server=server, beat=beat, local=local)
