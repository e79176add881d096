"""The aggregator's client of the scheduler service: deadlines, retries for idempotent calls, domain errors."""

from __future__ import annotations

from jarvis.aggregator.service_client import ServiceClient
from jarvis.api.scheduler.v1 import scheduler_pb2_grpc

SCHEDULER_SERVICE = "jarvis.api.scheduler.v1.SchedulerService"

# Reads, deletes and whole-or-nothing updates may be replayed when the scheduler restarts; a replayed
# create would make a second schedule and a replayed trigger a second set of runs, so those never are.
IDEMPOTENT = {
    SCHEDULER_SERVICE: [
        "ListSchedules", "GetSchedule", "ListRuns", "GetStatus", "DeleteSchedule", "UpdateSchedule",
    ],
}


class SchedulerClient(ServiceClient):
    """Calls the scheduler; its errors come back as the domain errors they stand for."""

    service = "scheduler"

    def __init__(self, target: str) -> None:
        super().__init__(target, IDEMPOTENT)
        self.scheduler = scheduler_pb2_grpc.SchedulerServiceStub(self.channel)
