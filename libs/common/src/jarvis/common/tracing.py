"""Traces (issue 50): OpenTelemetry, configured by the standard variables, off unless an endpoint is set.

`OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) turns tracing on, exported over OTLP/HTTP
with protobuf (`OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf`, the default and the exporter Jarvis ships). The SDK reads
the rest itself: `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER` and `_ARG`, the batch
processor's `OTEL_BSP_*`. Off, no provider is installed: every tracer is the API's no-op, and the helpers here return
before doing anything, so tracing costs nothing measurable.

Context travels as W3C `traceparent`/`tracestate`: over gRPC in the call's metadata (`client_span`, `server_span`),
to downstream MCP servers in the request's `_meta` (SEP-414) and, over HTTP, its headers (`inject`), in a queued
task's headers (`carrier`, `continued`), and to an agent's process in its environment (`environment`); an agent's
calls back name it through their credential, which carries the trace it was minted in (`incoming`'s fallback).
Work done later for many calls at once (a batch of usage records) links to each call's span instead (`linked`,
`linking`): OpenTelemetry's convention for batches, since a span has one parent.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
from collections.abc import Iterable, Iterator, Mapping, MutableMapping, Sequence
from contextvars import ContextVar
from typing import Any

from opentelemetry import context, propagate, trace
from opentelemetry.trace import Link, Span, SpanContext, SpanKind

log = logging.getLogger(__name__)

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
PROTOCOL_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
PROTOCOL = "http/protobuf"
TRACER = "jarvis"
FIELDS = ("traceparent", "tracestate")  # W3C trace context: HTTP headers, `_meta` keys, a queued task's headers
_TRACE_HEADERS = tuple(field.encode() for field in FIELDS)

# The SDK's default limit of links per span (OTEL_SPAN_LINK_COUNT_LIMIT): it would drop the rest anyway.
MAX_LINKS = 128

_on = False  # set once, by `configure`, where an endpoint is set
_links: ContextVar[tuple[SpanContext, ...]] = ContextVar("jarvis_span_links", default=())


def enabled() -> bool:
    """Whether this process exports traces."""
    return _on


def configure(service_name: str, environ: Mapping[str, str] | None = None) -> bool:
    """Install the SDK's tracer provider and OTLP exporter where the environment names an endpoint; once per process
    (the embedded stack's services and its aggregator share one). Whether tracing is on."""
    global _on
    env = os.environ if environ is None else environ
    if _on or not any(env.get(name) for name in ENDPOINT_VARIABLES):
        return _on
    protocol = next((env[name] for name in PROTOCOL_VARIABLES if env.get(name)), PROTOCOL)
    if protocol != PROTOCOL:
        log.warning(
            "traces are off: %s=%s is not supported; Jarvis exports OTLP over HTTP with protobuf (%s)",
            PROTOCOL_VARIABLES[1],
            protocol,
            PROTOCOL,
        )
        return False
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    named = env.get("OTEL_SERVICE_NAME") or "service.name=" in env.get("OTEL_RESOURCE_ATTRIBUTES", "")
    provider = TracerProvider(resource=Resource.create({} if named else {SERVICE_NAME: service_name}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    _on = True
    log.info("traces are exported over OTLP/HTTP", extra={"service": service_name})
    return True


def flush(timeout_seconds: float = 5.0) -> None:
    """Send the spans still batched (at shutdown, so the last calls' spans are not lost)."""
    provider = trace.get_tracer_provider()
    force_flush = getattr(provider, "force_flush", None)
    if _on and callable(force_flush):
        force_flush(int(timeout_seconds * 1000))


@functools.cache
def tracer() -> trace.Tracer:
    """Jarvis's tracer, made once: the SDK makes a new one, with its instrumentation scope, at every `get_tracer`
    (a third of what tracing cost a proxied call, measured). Made before `configure`, it is the API's proxy, which
    turns to the provider once one is set."""
    return trace.get_tracer(TRACER)


def exemplar() -> dict[str, str] | None:
    """The current sampled span's trace id, as a latency histogram's exemplar (OpenMetrics): a dashboard's slow bucket
    then links to its trace. None when tracing is off or the span is not sampled."""
    current = linked()
    return None if current is None else {"trace_id": f"{current.trace_id:032x}"}


def linked() -> SpanContext | None:
    """The current sampled span's context, for work done later on this call's behalf (a batch that records it) to
    link to; None when tracing is off or the span is not sampled (it is never exported: nothing to link to)."""
    if not _on:
        return None
    current = trace.get_current_span().get_span_context()
    return current if current.is_valid and current.trace_flags.sampled else None


def link(fields: Mapping[str, Any], attributes: Mapping[str, Any] | None = None) -> None:
    """Link the current span to the span W3C `fields` name: work that continues what another trace began (a call
    made again after the consent its first try asked for). Nothing when off, or when `fields` name no span."""
    if not _on:
        return
    linked = trace.get_current_span(propagate.extract(_strings(fields))).get_span_context()
    if linked.is_valid:
        trace.get_current_span().add_link(linked, dict(attributes or {}))


@contextlib.contextmanager
def linking(spans: Sequence[SpanContext]) -> Iterator[None]:
    """The gRPC client spans opened within link to `spans` (at most MAX_LINKS): a batch's one call to a service,
    linked to each call it carries, as OpenTelemetry has batches do, since a span has one parent."""
    token = _links.set(tuple(spans[:MAX_LINKS]))
    try:
        yield
    finally:
        _links.reset(token)


def inject(carrier: MutableMapping[str, Any], span: Span | None = None) -> None:
    """Put the current span's context (or `span`'s) into `carrier` (a request's `_meta`, or HTTP headers), replacing
    any there: a server downstream is the child of Jarvis's span, not of the caller's."""
    if _on:
        propagate.inject(carrier, context=None if span is None else trace.set_span_in_context(span))


def carrier() -> dict[str, str]:
    """The current span's context as W3C fields (empty when off or outside a span), for what outlives this call: a
    queued task, a message."""
    fields: dict[str, str] = {}
    inject(fields)
    return fields


def environment() -> dict[str, str]:
    """The current span's context as a child process reads it: TRACEPARENT and TRACESTATE, OpenTelemetry's
    environment carrier (empty when off or outside a span)."""
    return {name.upper(): value for name, value in carrier().items()}


def started(
    name: str,
    fields: Mapping[str, Any],
    kind: SpanKind = SpanKind.CLIENT,
    attributes: Mapping[str, Any] | None = None,
) -> Span:
    """A span begun now, the child of the one W3C `fields` name, that the caller ends (`span.end()`): for work whose
    start and end are steps of a generator (an httpx auth flow's token refresh). Not made current; when off, the
    invalid span, whose methods do nothing."""
    if not _on:
        return trace.INVALID_SPAN
    parent = propagate.extract(_strings(fields))
    return tracer().start_span(name, context=parent, kind=kind, attributes=dict(attributes or {}))


def _strings(fields: Mapping[str, Any]) -> dict[str, str]:
    return {key: value for key, value in fields.items() if isinstance(value, str)}


@contextlib.contextmanager
def continued(
    name: str,
    fields: Mapping[str, Any],
    kind: SpanKind = SpanKind.CONSUMER,
    attributes: Mapping[str, Any] | None = None,
) -> Iterator[None]:
    """A span in the trace `fields` name (a queued task's headers, a call's metadata), the child of the span they
    carry; a trace of its own where they carry none. Nothing when tracing is off."""
    if not _on:
        yield
        return
    parent = propagate.extract(_strings(fields))
    with tracer().start_as_current_span(name, context=parent, kind=kind, attributes=dict(attributes or {})):
        yield


@contextlib.contextmanager
def span(name: str, kind: SpanKind = SpanKind.INTERNAL, attributes: Mapping[str, Any] | None = None) -> Iterator[Span]:
    """A span under the current one (nothing when tracing is off)."""
    if not _on:
        yield trace.INVALID_SPAN
        return
    parent = trace.get_current_span()
    if _dropped_here(parent):
        yield parent
        return
    with tracer().start_as_current_span(name, kind=kind, attributes=dict(attributes or {})) as current:
        yield current


def opened(name: str, start_time: int, attributes: Mapping[str, Any] | None = None) -> Span:
    """A span under the current one that began at `start_time` (`time.time_ns()`), opened late: for work worth a span
    only if it took time, which is known only once it has (a pipeline step). Not made current; the caller ends it.
    The invalid span when off, or under a trace this process's sampler dropped (as `span`)."""
    if not _on:
        return trace.INVALID_SPAN
    if _dropped_here(trace.get_current_span()):
        return trace.INVALID_SPAN
    return tracer().start_span(name, attributes=dict(attributes or {}), start_time=start_time)


def _dropped_here(parent: Span) -> bool:
    """Whether this process's sampler dropped `parent`'s trace: a child would be a dropped span that costs as much to
    open as a kept one. The standard samplers decide a child as its trace's root was decided here (by the parent, or
    by the same trace id's ratio), so none is lost. A remote parent's flag is the caller's: the sampler still asks."""
    decided = parent.get_span_context()
    return decided.is_valid and not decided.is_remote and not decided.trace_flags.sampled


def fields(stored: object) -> dict[str, str]:
    """The W3C fields in what was read back from storage (a credential's record or claims), nothing else."""
    if not isinstance(stored, Mapping):
        return {}
    return {key: value for key, value in stored.items() if key in FIELDS and isinstance(value, str)}


@contextlib.contextmanager
def incoming(headers: Iterable[tuple[bytes, bytes]], fallback: Mapping[str, str] | None = None) -> Iterator[None]:
    """Serve an HTTP request under the trace its `traceparent`/`tracestate` headers name, where it sent them, else
    under `fallback` (the trace its caller's credential was minted in: an agent's, decision 0066); the trace context
    of an MCP request's `_meta` (SEP-414) is read by the SDK's span and wins over both for that request."""
    if not _on:
        yield
        return
    carrier = {key.decode("latin-1"): value.decode("latin-1") for key, value in headers if key in _TRACE_HEADERS}
    carrier = carrier or dict(fallback or {})
    if not carrier:
        yield
        return
    token = context.attach(propagate.extract(carrier))
    try:
        yield
    finally:
        context.detach(token)


@contextlib.contextmanager
def client_span(service: str, method: str) -> Iterator[list[tuple[str, str]]]:
    """A gRPC call's client span; yields the metadata that carries its context to the server (none when off)."""
    if not _on:
        yield []
        return
    attributes = {"rpc.system": "grpc", "rpc.service": service, "rpc.method": method}
    links = [Link(linked) for linked in _links.get()]
    with tracer().start_as_current_span(
        f"{service}/{method}", kind=SpanKind.CLIENT, attributes=attributes, links=links
    ):
        carrier: dict[str, str] = {}
        propagate.inject(carrier)
        yield list(carrier.items())


@contextlib.contextmanager
def server_span(service: str, method: str, metadata: Iterable[tuple[str, Any]] | None) -> Iterator[None]:
    """A gRPC call's server span, the child of the caller's span its metadata carries."""
    attributes = {"rpc.system": "grpc", "rpc.service": service, "rpc.method": method}
    with continued(f"{service}/{method}", dict(metadata or ()), SpanKind.SERVER, attributes):
        yield
