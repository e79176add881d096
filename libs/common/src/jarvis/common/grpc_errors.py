"""The one mapping between domain errors and gRPC status codes, both directions."""

from __future__ import annotations

from collections.abc import Iterable

import grpc

from jarvis.common.errors import (
    AlreadyExists,
    DeadlineExceeded,
    FailedPrecondition,
    Internal,
    InvalidArgument,
    JarvisError,
    NotFound,
    PermissionDenied,
    Unauthenticated,
    Unavailable,
)
from jarvis.common.internal_plane import REFUSED_MARKER, TOKEN, TOKEN_FILE

# Services started by `jarvis serve NAME`: a transport error says to check that command.
SERVICES = frozenset({"registry", "runtime", "scheduler", "debug"})

_CODE_BY_ERROR: dict[type[JarvisError], grpc.StatusCode] = {
    NotFound: grpc.StatusCode.NOT_FOUND,
    AlreadyExists: grpc.StatusCode.ALREADY_EXISTS,
    InvalidArgument: grpc.StatusCode.INVALID_ARGUMENT,
    FailedPrecondition: grpc.StatusCode.FAILED_PRECONDITION,
    PermissionDenied: grpc.StatusCode.PERMISSION_DENIED,
    Unauthenticated: grpc.StatusCode.UNAUTHENTICATED,
    Unavailable: grpc.StatusCode.UNAVAILABLE,
    DeadlineExceeded: grpc.StatusCode.DEADLINE_EXCEEDED,
    Internal: grpc.StatusCode.INTERNAL,
}
_ERROR_BY_CODE: dict[grpc.StatusCode, type[JarvisError]] = {v: k for k, v in _CODE_BY_ERROR.items()}


def status_code_for(error: JarvisError) -> grpc.StatusCode:
    for cls in type(error).__mro__:
        if cls in _CODE_BY_ERROR:
            return _CODE_BY_ERROR[cls]
    return grpc.StatusCode.INTERNAL


def error_from_rpc(exc: grpc.RpcError, service: str, target: str = "", timeout: float | None = None) -> JarvisError:
    """Turn a failed call into the domain error it stands for, with a message a person can act on.

    Transport failures (unreachable, no answer in time, the internal credential refused) name the
    service, where it was called and what to check; errors the service itself raised keep its message.
    """
    code: grpc.StatusCode = exc.code()
    details: str = exc.details() or ""
    where = f"the {service} service" + (f" at {target}" if target else "")
    check = (
        f"check that `jarvis serve {service}` is running and not stalled"
        if service in SERVICES
        else ("check that it is running")
    )
    if code == grpc.StatusCode.UNAVAILABLE:
        return Unavailable(f"{where} is unreachable ({details or 'no details'}); {check}")
    # gRPC's own text for a deadline the caller set; a service's DeadlineExceeded carries its own message.
    if code == grpc.StatusCode.DEADLINE_EXCEEDED and details.strip() in ("", "Deadline Exceeded"):
        within = f" within {timeout:g} s" if timeout else " in time"
        return DeadlineExceeded(f"{where} did not answer{within}; {check}")
    if code == grpc.StatusCode.UNAUTHENTICATED and REFUSED_MARKER in tuple(_trailers(exc)):
        return FailedPrecondition(
            f"{where} refused this process's internal credential; give every Jarvis process "
            f"the same {TOKEN} (or {TOKEN_FILE})"
        )
    return _ERROR_BY_CODE.get(code, Internal)(details or f"{service} failed with {code.name}")


def _trailers(exc: grpc.RpcError) -> Iterable[tuple[str, str | bytes]]:
    trailing = getattr(exc, "trailing_metadata", None)
    return (trailing() or ()) if callable(trailing) else ()
