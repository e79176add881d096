"""The registry client's channel, its retry and deadline tables and its read cache; the calls are the
subclasses' (registry_admin.py, registry.py)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar, Generic, TypeVar

from google.protobuf.message import Message

from jarvis.aggregator.gateways.client import ServiceClient
from jarvis.api.registry.v1 import project_pb2_grpc, registry_pb2_grpc
from jarvis.common.internal_plane import InternalPlane

REGISTRY_SERVICE = "jarvis.api.registry.v1.RegistryService"
PROJECT_SERVICE = "jarvis.api.registry.v1.ProjectService"

# Reads and idempotent writes may be retried when the registry restarts; creates may not.
IDEMPOTENT = {
    REGISTRY_SERVICE: [
        "ListServers",
        "GetServer",
        "SearchServers",
        "ListCatalog",
        "GetCatalogEntry",
        "ListProfiles",
        "GetProfile",
        "SuggestProfiles",
        "ListClients",
        "GetConfig",
        "SetConfig",
        "ListConfig",
        "ListTokens",
        "VerifyToken",
        "RevokeToken",
        "GetUsage",
        "Bootstrap",
        "Doctor",
        "ClientConfigPath",
        "RecordToolPins",
        "ListToolPins",
        "ApproveToolPins",
    ],
    PROJECT_SERVICE: ["Analyze", "Diff"],
}

ResponseT = TypeVar("ResponseT", bound=Message)
ViewT = TypeVar("ViewT")
# Catalog entries read per request: with tool schemas, an imported catalog gets large.
CATALOG_PAGE = 200
# Whole-listing reads for the aggregator's own sync loops: at start the registry may not be up yet, and the next
# tick retries, so a short deadline.
SYNC_DEADLINE_SECONDS = 10.0


class Snapshot(Generic[ViewT]):
    """A registry answer read whole: a digest that changes exactly when the answer does, and its views, converted
    only when asked for (a loop that polls a large listing converts it only when it changed)."""

    def __init__(self, digest: bytes, convert: Callable[[], ViewT]) -> None:
        self.digest = digest
        self._convert = convert
        self._views: ViewT | None = None

    @property
    def views(self) -> ViewT:
        if self._views is None:
            self._views = self._convert()
        return self._views


# Usage events added to a request per turn of the event loop (~0.3 ms of it each; see record_usage).
_EVENTS_PER_TURN = 256
# Requests that cannot change what cached reads return; any other request drops the cache.
_KEEPS_CACHE = frozenset(
    {
        "ListServersRequest",
        "GetServerRequest",
        "SearchServersRequest",
        "ListCatalogRequest",
        "GetCatalogEntryRequest",
        "ListProfilesRequest",
        "GetProfileRequest",
        "SuggestProfilesRequest",
        "ListClientsRequest",
        "GetConfigRequest",
        "ListConfigRequest",
        "ListTokensRequest",
        "VerifyTokenRequest",
        "RecordUsageRequest",
        "GetUsageRequest",
        "DoctorRequest",
        "AnalyzeRequest",
        "DiffRequest",
        "ListToolPinsRequest",
    }
)


class RegistryBase(ServiceClient):
    """Calls the registry; answers hot reads (the server list every agent asks for) from a short cache.

    A write made through this client drops the cache at once; a write made elsewhere (the CLI,
    another aggregator replica) is seen within `read_cache_seconds`.
    """

    service = "registry"
    # Reads and small writes get the default few seconds; these do real work (git, file walks, imports).
    slow: ClassVar[dict[str, float]] = {
        "Bootstrap": 60.0,
        "ImportCatalog": 120.0,
        "ListAudit": 60.0,
        "Doctor": 15.0,
        "Analyze": 60.0,
        "Diff": 60.0,
        "ApplyDevops": 60.0,
        "MigrateConfig": 30.0,
        "ImportClient": 30.0,
        "EditClient": 30.0,
        "SuggestProfiles": 15.0,
        "SearchServers": 10.0,
        "ListCatalog": 10.0,
        "RecordUsage": 15.0,
        "InstallServer": 15.0,
        "CreateServer": 15.0,
        "EditServer": 15.0,
        "UninstallServer": 15.0,
    }

    def __init__(self, target: str, read_cache_seconds: float = 2.0, plane: InternalPlane | None = None) -> None:
        super().__init__(target, IDEMPOTENT, plane)
        self._registry = registry_pb2_grpc.RegistryServiceStub(self._channel)
        self._project = project_pb2_grpc.ProjectServiceStub(self._channel)
        self._ttl = read_cache_seconds
        self._cache: dict[bytes, tuple[float, Any]] = {}

    async def _call(
        self, method: Callable[..., Awaitable[ResponseT]], request: Message, timeout: float | None = None
    ) -> ResponseT:
        if type(request).__name__ not in _KEEPS_CACHE:
            self._cache.clear()
        return await super()._call(method, request, timeout)

    async def cached(
        self,
        method: Callable[..., Awaitable[ResponseT]],
        request: Message,
        convert: Callable[[ResponseT], ViewT],
    ) -> ViewT:
        """A read answered from the cache when fresh, kept converted: the hot reads come once per request.

        Callers must not mutate what they get (views are frozen; collections are tuples).
        """
        key = type(request).__name__.encode() + request.SerializeToString(deterministic=True)
        hit = self._cache.get(key)
        now = time.monotonic()
        if hit is not None and hit[0] > now:
            return hit[1]  # type: ignore[no-any-return]
        view = convert(await self._call(method, request))
        self._cache[key] = (now + self._ttl, view)
        return view
