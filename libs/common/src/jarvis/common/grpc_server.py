"""gRPC server factory: health, reflection, the internal plane's auth, error mapping and metrics for every service."""

from __future__ import annotations

import contextlib
import hmac
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent import futures
from dataclasses import dataclass
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from jarvis.common import tracing
from jarvis.common.errors import JarvisError
from jarvis.common.grpc_errors import status_code_for
from jarvis.common.internal_plane import AUTH_HEADER, REFUSED_MARKER, TOKEN, InternalPlane
from jarvis.common.metrics import GrpcMetrics

log = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class ServiceBinding:
    """A servicer and the generated function that adds it to a server."""

    add_to_server: Callable[[Any, grpc.Server], None]
    servicer: Any
    full_name: str  # e.g. "jarvis.api.registry.v1.RegistryService"


# Probes (compose, kubelet, load balancers) ask health without a credential; nothing else is open.
_OPEN_PREFIX = f"/{health.SERVICE_NAME}/"


class _Authenticate(grpc.ServerInterceptor):  # type: ignore[misc]
    """The one check of the internal plane's credential, in front of every method but health."""

    def __init__(self, token: str) -> None:
        self._expected = f"Bearer {token}".encode()

    def intercept_service(self, continuation: Callable[..., Any], details: Any) -> Any:
        if details.method.startswith(_OPEN_PREFIX):
            return continuation(details)
        presented = next((value for key, value in details.invocation_metadata or () if key == AUTH_HEADER), "")
        given = presented.encode() if isinstance(presented, str) else bytes(presented)
        if hmac.compare_digest(given, self._expected):
            return continuation(details)
        log.warning(
            "refused a call without the service credential",
            extra={"method": details.method, "credential": "wrong" if given else "missing"},
        )
        return _refusal(continuation(details))


def _refuse(_: Any, context: grpc.ServicerContext) -> Any:
    context.set_trailing_metadata((REFUSED_MARKER,))
    context.abort(
        grpc.StatusCode.UNAUTHENTICATED,
        f"this service needs the internal plane's credential: call it with the deployment's {TOKEN}",
    )


def _refusal(handler: Any) -> Any:
    """A handler of the same kind as `handler` (a refused caller learns nothing about the method) that refuses."""
    if handler is not None and handler.request_streaming:
        if handler.response_streaming:
            return grpc.stream_stream_rpc_method_handler(_refuse)
        return grpc.stream_unary_rpc_method_handler(_refuse)
    if handler is not None and handler.response_streaming:
        return grpc.unary_stream_rpc_method_handler(_refuse)
    return grpc.unary_unary_rpc_method_handler(_refuse)


class _ErrorsAndMetrics(grpc.ServerInterceptor):  # type: ignore[misc]
    """Maps domain errors to status codes (the one place) and records every call, unary or streaming."""

    def __init__(self, metrics: GrpcMetrics | None) -> None:
        self._metrics = metrics

    def intercept_service(self, continuation: Callable[..., Any], details: Any) -> Any:
        handler = continuation(details)
        if handler is None:
            return handler
        service, _, method = details.method.lstrip("/").rpartition("/")
        answering = self._answering
        codecs = {
            "request_deserializer": handler.request_deserializer,
            "response_serializer": handler.response_serializer,
        }
        if handler.unary_unary is not None:
            unary = handler.unary_unary

            def behaviour(request: Any, context: grpc.ServicerContext) -> Any:
                with answering(service, method, context):
                    return unary(request, context)

            return grpc.unary_unary_rpc_method_handler(behaviour, **codecs)
        if handler.stream_stream is not None:
            streaming = handler.stream_stream

            def stream_behaviour(requests: Iterator[Any], context: grpc.ServicerContext) -> Iterator[Any]:
                with answering(service, method, context):
                    yield from streaming(requests, context)

            return grpc.stream_stream_rpc_method_handler(stream_behaviour, **codecs)
        return handler  # no unary-stream or stream-unary calls are served

    @contextlib.contextmanager
    def _answering(self, service: str, method: str, context: grpc.ServicerContext) -> Iterator[None]:
        started = time.perf_counter()
        code = grpc.StatusCode.OK
        try:
            with tracing.server_span(service, method, context.invocation_metadata()):
                yield
        except GeneratorExit:
            code = grpc.StatusCode.CANCELLED  # the caller left a streaming call
            raise
        except JarvisError as exc:
            code = status_code_for(exc)
            context.abort(code, exc.message)
        except NotImplementedError:
            code = grpc.StatusCode.UNIMPLEMENTED
            context.abort(code, f"{method} is not implemented by this server")
        except Exception:
            code = grpc.StatusCode.INTERNAL
            log.exception("unhandled error in %s/%s", service, method)
            context.abort(code, f"internal error in {method}; see the service log")
        finally:
            if self._metrics is not None:
                self._metrics.calls.labels(service, method, code.name).inc()
                self._metrics.latency.labels(service, method).observe(time.perf_counter() - started)


class RunningServer:
    """A started server with its bound port and health servicer."""

    def __init__(
        self, server: grpc.Server, port: int, health_servicer: health.HealthServicer, names: Sequence[str]
    ) -> None:
        self.server = server
        self.port = port
        self.health = health_servicer
        self._names = names

    def stop(self, grace: float = 5.0) -> None:
        """Refuse new calls, let in-flight ones finish within `grace` seconds."""
        for name in (*self._names, ""):
            self.health.set(name, health_pb2.HealthCheckResponse.NOT_SERVING)
        self.server.stop(grace).wait()


def create_server(
    bindings: Iterable[ServiceBinding],
    address: str = "127.0.0.1:0",
    *,
    metrics: GrpcMetrics | None = None,
    max_workers: int = 16,
    plane: InternalPlane | None = None,
) -> RunningServer:
    """Build, bind and start a server. `address` may use port 0; the bound port is returned.

    With a credential in `plane` every call but health must carry it; without one the server only binds
    loopback (PlaneConfigError otherwise). With a certificate and key in `plane` it speaks TLS only.
    """
    bindings = list(bindings)
    plane = plane or InternalPlane()
    plane.check_listen(address)
    interceptors: list[grpc.ServerInterceptor] = [_Authenticate(plane.token)] if plane.token else []
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="grpc"),
        interceptors=[*interceptors, _ErrorsAndMetrics(metrics)],
        options=[
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
        ],
    )
    health_servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    names = [b.full_name for b in bindings]
    for binding in bindings:
        binding.add_to_server(binding.servicer, server)
    reflection.enable_server_reflection([*names, health.SERVICE_NAME, reflection.SERVICE_NAME], server)
    credentials = plane.server_credentials()
    port = server.add_secure_port(address, credentials) if credentials else server.add_insecure_port(address)
    if port == 0 and not address.startswith("unix:"):
        raise OSError(f"could not bind gRPC server to {address}")
    server.start()
    for name in (*names, ""):
        health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
    log.info(
        "grpc server listening",
        extra={
            "address": address,
            "port": port,
            "services": names,
            "authenticated": plane.token is not None,
            "tls": plane.serves_tls,
        },
    )
    return RunningServer(server, port, health_servicer, names)
