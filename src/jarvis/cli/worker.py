"""One aggregator worker process beside the main one (`python -m jarvis.cli.worker SLOT`, started by `WorkerPool`).

It reads its settings from stdin, dies with the main process, and serves the main process's port
through a socket of its own (SO_REUSEPORT).
"""

from __future__ import annotations

import sys

from jarvis.aggregator.settings import AggregatorSettings
from jarvis.cli.runner import RemoteControl, WorkerControl, serve_aggregator
from jarvis.cli.workers import die_with_parent, read_payload, reuse_port_socket
from jarvis.common.logging import configure_logging


def main() -> None:
    payload = read_payload()
    die_with_parent(int(payload["parent"]))
    slot = int(sys.argv[1])  # 1..N-1: the main process is worker 0
    settings = AggregatorSettings(**{**payload["settings"], "worker_slot": slot})
    configure_logging(settings.log_level, settings.log_json)
    control = (
        WorkerControl(settings, int(payload["parent"]))
        if payload["mode"] == WorkerControl.mode
        else RemoteControl(settings)
    )
    serve_aggregator(settings, control, lambda: reuse_port_socket(settings.host, settings.port))


if __name__ == "__main__":
    main()
