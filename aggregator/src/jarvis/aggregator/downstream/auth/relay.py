"""A person's consent across workers and replicas: the process holding it answers its link and its return.

A consent runs in the process that began it (consent.py): the SDK's OAuth flow waits there, with its PKCE verifier,
for the code. With several workers on one port, or replicas behind one address, the person's browser may bring the
link or the authorization server's return to another process, which knows nothing of it. Where Jarvis has Redis
(which several workers require anyway), that process asks every other over a pub/sub channel; the one holding the
consent does what it would have done for a browser of its own and says how it went, on a reply channel the asker
named. The asker answers the browser with that: the same redirect and cookie for a link, the same page for a
return. The cookie check stays with the holder (the asker passes the browser's consent cookies on), so a return
carrying someone else's state still fails. What crosses Redis: a consent's id or state, the person it is for
(never a secret), the cookie's value and the authorization code, each good once and for minutes; no token.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import time
from dataclasses import dataclass
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from jarvis.aggregator.downstream.auth.consent import (
    EXCHANGE_SECONDS,
    ConsentFailed,
    Consents,
    Described,
    NotYourConsent,
    cookie_name,
)
from jarvis.aggregator.tooling.background import Background

log = logging.getLogger(__name__)

CHANNEL = "jarvis:downstream-consents"
HOLDER_SECONDS = 2.0  # how long a process waits for the holder of a consent to say it has it
RESUBSCRIBE_SECONDS, MAX_RESUBSCRIBE_SECONDS = 1.0, 30.0  # after Redis failed, doubling while it stays down
UNKNOWN = "this consent link is unknown, used or expired; ask for a new one"


@dataclass(frozen=True)
class Opened:
    """A link the holder opened: where to send the browser, and the cookie binding it to the consent."""

    target: str
    cookie: str
    nonce: str


@dataclass(frozen=True)
class Returned:
    """How a return the holder finished went."""

    server: str
    person: str
    error: str
    connected: bool


class ConsentRelay:
    def __init__(self, redis_url: str, consents: Consents) -> None:
        self._redis = aioredis.Redis.from_url(redis_url, socket_connect_timeout=2.0)
        self.consents = consents
        self._background = Background()

    # ------------------------------------------------------------ asking

    async def describe(self, flow_id: str) -> Described:
        """Whose consent another process holds under `flow_id`; ConsentFailed when none does or it is unusable."""
        done = await self._ask("describe", {"flow": flow_id}, HOLDER_SECONDS)
        if done.get("error"):
            raise ConsentFailed(str(done["error"]))
        return Described(str(done["person"]), str(done["server"]))

    async def open(self, flow_id: str, proven: str) -> Opened:
        """Open a link whose consent another process holds, for a browser that proved to be `proven` (the holder
        checks it, as Consents.open does); ConsentFailed when none holds it or it is unusable."""
        done = await self._ask("open", {"flow": flow_id, "proven": proven}, HOLDER_SECONDS)
        if done.get("error"):
            raise (NotYourConsent if done.get("not_yours") else ConsentFailed)(str(done["error"]))
        return Opened(str(done["target"]), str(done["cookie"]), str(done["nonce"]))

    async def returned(
        self, state: str, cookies: dict[str, str], code: str, error: str, iss: str | None, description: str
    ) -> Returned:
        """Finish a return whose consent another process holds; ConsentFailed as the holder's own would."""
        payload = {"state": state, "cookies": cookies, "code": code, "error": error, "iss": iss, "desc": description}
        done = await self._ask("return", payload, EXCHANGE_SECONDS + HOLDER_SECONDS)
        if done.get("failed"):
            raise ConsentFailed(str(done["failed"]))
        return Returned(str(done["server"]), str(done["person"]), str(done["error"]), bool(done["connected"]))

    async def wait_for(self, flow_id: str, person: str, server: str, seconds: float) -> bool:
        """Wait (up to `seconds`) for the consent another process holds for `person` at `server` to finish; whether
        they ended connected. False when no process holds it (or Redis failed): the call then asks again."""
        payload = {"flow": flow_id, "person": person, "server": server, "seconds": seconds}
        try:
            done = await self._ask("wait", payload, seconds + HOLDER_SECONDS)
        except ConsentFailed:
            return False
        return bool(done.get("connected"))

    async def _ask(self, op: str, payload: dict[str, Any], wait: float) -> dict[str, Any]:
        """Publish a request and wait for its holder: first that it holds the consent (within HOLDER_SECONDS), then
        its answer (within `wait`)."""
        reply = f"{CHANNEL}:reply:{secrets.token_hex(12)}"
        pubsub = self._redis.pubsub()
        try:
            await pubsub.subscribe(reply)
            await self._redis.publish(CHANNEL, json.dumps({"op": op, "reply": reply, **payload}))
            deadline = time.monotonic() + HOLDER_SECONDS
            while (left := deadline - time.monotonic()) > 0:
                message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=left)
                body = _parsed(message["data"]) if message is not None else None
                if not isinstance(body, dict):
                    continue
                if body.get("kind") == "held":
                    deadline = time.monotonic() + wait
                    continue
                return dict(body)
        except RedisError as exc:
            log.warning("consent relay: Redis failed (%s)", type(exc).__name__)
            raise ConsentFailed(UNKNOWN) from None
        finally:
            await pubsub.aclose()  # type: ignore[no-untyped-call]  # redis-py leaves PubSub.aclose unannotated
        raise ConsentFailed(UNKNOWN)

    # ------------------------------------------------------------ holding

    async def run(self) -> None:
        """Answer the requests for consents this process holds, until cancelled."""
        delay = RESUBSCRIBE_SECONDS
        while True:
            pubsub = self._redis.pubsub()
            try:
                await pubsub.subscribe(CHANNEL)
                delay = RESUBSCRIBE_SECONDS
                async for message in pubsub.listen():
                    if message.get("type") == "message" and isinstance(request := _parsed(message["data"]), dict):
                        self._background.spawn(self._answer(request))
            except RedisError as exc:
                log.warning("consent relay: listening failed (%s); again in %.0f s", type(exc).__name__, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, MAX_RESUBSCRIBE_SECONDS)
            finally:
                await pubsub.aclose()  # type: ignore[no-untyped-call]  # redis-py leaves PubSub.aclose unannotated

    async def close(self) -> None:
        await self._background.close()
        await self._redis.aclose()

    async def _answer(self, request: dict[str, Any]) -> None:
        reply = str(request.get("reply", ""))
        if request.get("op") == "describe":
            flow_id = str(request.get("flow", ""))
            if not self.consents.holds(flow_id):
                return
            await self._say(reply, {"kind": "held"})
            try:
                described = self.consents.describe(flow_id)
            except ConsentFailed as exc:
                await self._say(reply, {"kind": "done", "error": str(exc)})
                return
            await self._say(reply, {"kind": "done", "person": described.person, "server": described.server})
        elif request.get("op") == "open":
            flow_id = str(request.get("flow", ""))
            if not self.consents.holds(flow_id):
                return
            await self._say(reply, {"kind": "held"})
            try:
                flow, target = self.consents.open(flow_id, str(request.get("proven", "")))
            except ConsentFailed as exc:
                not_yours = isinstance(exc, NotYourConsent)
                await self._say(reply, {"kind": "done", "error": str(exc), "not_yours": not_yours})
                return
            await self._say(
                reply, {"kind": "done", "target": target, "cookie": cookie_name(flow.id), "nonce": flow.nonce}
            )
        elif request.get("op") == "return":
            state = str(request.get("state", ""))
            held = self.consents.flow_for_state(state)
            if held is None:
                return
            await self._say(reply, {"kind": "held"})
            cookies = request.get("cookies") or {}
            try:
                done = await self.consents.returned(
                    state,
                    str(cookies.get(cookie_name(held.id), "")),
                    str(request.get("code", "")),
                    str(request.get("error", "")),
                    request.get("iss"),
                    str(request.get("desc", "")),
                )
            except ConsentFailed as exc:
                await self._say(reply, {"kind": "done", "failed": str(exc)})
                return
            answer = {"server": done.server, "person": done.person, "error": done.error, "connected": done.connected}
            await self._say(reply, {"kind": "done", **answer})
        elif request.get("op") == "wait":
            await self._answer_wait(reply, request)

    async def _answer_wait(self, reply: str, request: dict[str, Any]) -> None:
        """Tell the asker once the consent it names, if this process holds it for that person and server, is done
        (no later than the consent's own life)."""
        flow = self.consents.flow(
            str(request.get("flow", "")), str(request.get("person", "")), str(request.get("server", ""))
        )
        if flow is None:
            return
        await self._say(reply, {"kind": "held"})
        asked = request.get("seconds")
        seconds = min(float(asked) if isinstance(asked, int | float) else 0.0, self.consents.settings.consent_seconds)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(flow.done.wait(), max(seconds, 0.0))
        await self._say(reply, {"kind": "done", "connected": flow.connected})

    async def _say(self, reply: str, body: dict[str, Any]) -> None:
        try:
            await self._redis.publish(reply, json.dumps(body))
        except RedisError as exc:
            log.warning("consent relay: could not answer (%s)", type(exc).__name__)


def _parsed(data: Any) -> Any:
    """A message's JSON; None for one that is not (nothing on the channel may stop the relay)."""
    try:
        return json.loads(data)
    except (TypeError, ValueError):
        return None
