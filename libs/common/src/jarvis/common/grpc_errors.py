"""The one mapping between domain errors and gRPC status codes, both directions."""

from __future__ import annotations

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


def error_from_rpc(exc: grpc.RpcError, service: str) -> JarvisError:
    """Turn a failed call into the domain error it stands for, with a message a person can act on."""
    code: grpc.StatusCode = exc.code()
    details: str = exc.details() or ""
    if code == grpc.StatusCode.UNAVAILABLE:
        return Unavailable(
            f"the {service} service is unreachable ({details or 'no details'}); "
            "check that it is running (`jarvis status`)"
        )
    if code == grpc.StatusCode.DEADLINE_EXCEEDED and not details.strip():
        return DeadlineExceeded(f"the {service} service did not answer in time; try again")
    return _ERROR_BY_CODE.get(code, Internal)(details or f"{service} failed with {code.name}")
