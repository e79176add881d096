"""Domain errors. They carry no transport codes: gRPC and MCP map them in one place each."""

from __future__ import annotations


class JarvisError(Exception):
    """Base of every error a caller is meant to read and act on."""

    kind = "internal"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class NotFound(JarvisError):
    kind = "not_found"


class AlreadyExists(JarvisError):
    kind = "already_exists"


class InvalidArgument(JarvisError):
    kind = "invalid_argument"


class FailedPrecondition(JarvisError):
    kind = "failed_precondition"


class PermissionDenied(JarvisError):
    kind = "permission_denied"


class Unauthenticated(JarvisError):
    kind = "unauthenticated"


class Unavailable(JarvisError):
    """A dependency (database, Docker, Redis, another service) cannot be reached."""

    kind = "unavailable"


class DeadlineExceeded(JarvisError):
    kind = "deadline_exceeded"


class Internal(JarvisError):
    kind = "internal"


ERRORS_BY_KIND: dict[str, type[JarvisError]] = {
    cls.kind: cls
    for cls in (
        NotFound,
        AlreadyExists,
        InvalidArgument,
        FailedPrecondition,
        PermissionDenied,
        Unauthenticated,
        Unavailable,
        DeadlineExceeded,
        Internal,
    )
}
