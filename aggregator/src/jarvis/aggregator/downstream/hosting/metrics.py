"""Prometheus view of the hosted servers, read from their supervisors at scrape time (nothing to keep in step).

Labels are states and server names: names are installed by admins, a bounded set like tool names.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from jarvis.aggregator.downstream.hosting.host import DownstreamHost
from jarvis.aggregator.downstream.hosting.supervisor import FAILING, RUNNING, STARTING, STOPPED

STATES = (STOPPED, STARTING, RUNNING, FAILING)


class DownstreamCollector(Collector):
    def __init__(self, host: DownstreamHost) -> None:
        self.host = host

    def describe(self) -> list[Metric]:
        return []  # no samples at registration: the servers are not known yet

    def collect(self) -> Iterator[Metric]:
        snapshots = {name: host.snapshot() for name, host in sorted(self.host.hosts.items())}
        servers = GaugeMetricFamily(
            "jarvis_downstream_servers", "Installed downstream servers by state.", labels=["state"]
        )
        for state in STATES:
            servers.add_metric([state], sum(1 for s in snapshots.values() if s.state == state))
        up = GaugeMetricFamily(
            "jarvis_downstream_server_up", "1 while a downstream server is running, else 0.", labels=["server"]
        )
        restarts = CounterMetricFamily(
            "jarvis_downstream_server_restarts",
            "Times a downstream server stopped on its own (crash, exit, lost connection) while it was running.",
            labels=["server"],
        )
        start_failures = CounterMetricFamily(
            "jarvis_downstream_server_start_failures",
            "Times a downstream server failed to start (its command failed, or it did not answer initialize).",
            labels=["server"],
        )
        quarantined = GaugeMetricFamily(
            "jarvis_downstream_quarantined_tools",
            "Tools withheld because their definition changed since it was pinned.",
            labels=["server"],
        )
        for name, snap in snapshots.items():
            up.add_metric([name], 1 if snap.state == RUNNING else 0)
            restarts.add_metric([name], snap.restarts)
            start_failures.add_metric([name], snap.start_failures)
            quarantined.add_metric([name], len(snap.quarantined))
        cached = CounterMetricFamily(
            "jarvis_downstream_cached_results",
            "Lists and reads answered from results their server said stay fresh (ttlMs), by method.",
            labels=["method"],
        )
        for method, served in self.host.results.served.items():
            cached.add_metric([method], served)
        yield cached
        in_flight = GaugeMetricFamily("jarvis_downstream_calls_in_flight", "Requests to downstream servers under way.")
        in_flight.add_metric([], sum(s.in_flight for s in snapshots.values()))
        personal = GaugeMetricFamily(
            "jarvis_downstream_person_instances",
            "Running instances or connections of a server kept for one person (servers.oauth, servers.per_person).",
            labels=["server"],
        )
        for name in sorted(self.host.hosts):
            if self.host.personal.serves(name):
                personal.add_metric([name], self.host.personal.running(name))
        yield from (servers, up, restarts, start_failures, quarantined, in_flight, personal)


def register(host: DownstreamHost, registry: CollectorRegistry) -> None:
    registry.register(DownstreamCollector(host))
