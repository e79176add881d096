"""The aggregator's client of the scheduler service: deadlines, retries for idempotent calls, domain errors."""

from __future__ import annotations

from typing import ClassVar

from jarvis.aggregator.gateways.client import ServiceClient
from jarvis.api.scheduler.v1 import scheduler_pb2_grpc
from jarvis.common.internal_plane import InternalPlane

SCHEDULER_SERVICE = "jarvis.api.scheduler.v1.SchedulerService"

# Reads, deletes and whole-or-nothing updates may be replayed when the scheduler restarts; a replayed
# create would make a second schedule and a replayed trigger a second set of runs, so those never are.
IDEMPOTENT = {
    SCHEDULER_SERVICE: [
        "ListSchedules",
        "GetSchedule",
        "ListRuns",
        "GetStatus",
        "DeleteSchedule",
        "UpdateSchedule",
    ],
}


class SchedulerGateway(ServiceClient):
    """Calls the scheduler; its errors come back as the domain errors they stand for."""

    service = "scheduler"
    # A trigger checks its target projects with the runtime; GetStatus pings the Celery workers.
    slow: ClassVar[dict[str, float]] = {
        "TriggerSchedule": 30.0,
        "CreateSchedule": 15.0,
        "UpdateSchedule": 15.0,
        "GetStatus": 10.0,
    }

    def __init__(self, target: str, plane: InternalPlane | None = None) -> None:
        super().__init__(target, IDEMPOTENT, plane)
        self.scheduler = scheduler_pb2_grpc.SchedulerServiceStub(self.channel)
