"""The consent relay between aggregator processes (downstream/auth/relay.py) on a real Redis: two processes' relays,
one holding a consent. The other learns whose consent a link is and opens it through the holder, once, for the
person it was made for only; a link nobody holds is refused within the holder wait; a return is finished by the
holder, whose cookie check stays; junk on the channel stops nothing."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

from jarvis.aggregator.downstream.auth.consent import ConsentFailed, Consents, Flow, NotYourConsent, cookie_name
from jarvis.aggregator.downstream.auth.guard import OAuthClientSettings
from jarvis.aggregator.downstream.auth.relay import CHANNEL, HOLDER_SECONDS, ConsentRelay
from tests.support.redis_server import redis_url

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with redis_url(Path(tmp_path_factory.mktemp("redis"))) as url:
        yield url


def consents() -> Consents:
    # No vault, no servers: these tests never begin a consent, they hold one made by hand (`held`).
    return Consents(store=None, server_url=lambda server: None, settings=OAuthClientSettings())  # type: ignore[arg-type]


def held(holder: Consents) -> Flow:
    """A consent under way at `holder`, its authorization URL known (as `Consents.begin` leaves one)."""
    flow = Flow("flow-1", "user:ann", "notes", "http://127.0.0.1:1")
    flow.authorize_url, flow.state = "http://as.example/authorize?state=st-1", "st-1"
    # Made by hand (there is no server to authorize at): what `begin` records of a consent under way.
    holder._by_id[flow.id] = flow
    holder._by_state[flow.state] = flow
    return flow


@pytest.fixture
async def relays(redis: str) -> AsyncIterator[tuple[ConsentRelay, ConsentRelay]]:
    holder, asker = ConsentRelay(redis, consents()), ConsentRelay(redis, consents())
    running = [asyncio.create_task(r.run()) for r in (holder, asker)]
    await asyncio.sleep(0.3)  # both subscribed
    try:
        yield holder, asker
    finally:
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        await holder.close()
        await asker.close()


async def test_a_link_held_elsewhere_is_opened_by_its_holder_once_for_its_person(
    relays: tuple[ConsentRelay, ConsentRelay],
) -> None:
    holder, asker = relays
    flow = held(holder.consents)
    described = await asker.describe(flow.id)
    assert (described.person, described.server) == ("user:ann", "notes")
    assert not flow.opened  # describing opens nothing
    with pytest.raises(NotYourConsent, match="another person"):
        await asker.open(flow.id, "user:mallory")
    with pytest.raises(NotYourConsent):
        await asker.open(flow.id, "")  # unproven: a signed-in person's consent never opens without sign-in
    assert not flow.opened
    opened = await asker.open(flow.id, "user:ann")
    assert opened.target == flow.authorize_url
    assert (opened.cookie, opened.nonce) == (cookie_name(flow.id), flow.nonce)
    assert flow.opened
    with pytest.raises(ConsentFailed, match="already opened"):
        await asker.open(flow.id, "user:ann")


async def test_a_link_nobody_holds_is_refused_once_the_holder_wait_is_over(
    relays: tuple[ConsentRelay, ConsentRelay],
) -> None:
    _, asker = relays
    began = time.monotonic()
    with pytest.raises(ConsentFailed, match="unknown"):
        await asker.open("no-such-flow", "user:ann")
    assert HOLDER_SECONDS <= time.monotonic() - began < HOLDER_SECONDS + 1.5


async def test_a_return_is_finished_by_the_holder_which_checks_the_cookie(
    relays: tuple[ConsentRelay, ConsentRelay], redis: str
) -> None:
    holder, asker = relays
    flow = held(holder.consents)
    flow.opened = True
    # Junk on the channel first: the holder's relay goes on answering.
    junk = aioredis.Redis.from_url(redis)
    await junk.publish(CHANNEL, "not json")
    await junk.publish(CHANNEL, "[1, 2]")
    await junk.aclose()
    with pytest.raises(ConsentFailed, match="another browser"):
        await asker.returned(flow.state, {cookie_name(flow.id): "someone else's"}, "code-1", "", None, "")

    async def finish() -> None:  # what the waiting SDK flow does with the code: the consent is then done
        answer: Any = await flow.answer
        assert answer.code == "code-2"
        flow.done.set()

    finishing = asyncio.create_task(finish())
    returned = await asker.returned(flow.state, {cookie_name(flow.id): flow.nonce}, "code-2", "", None, "")
    await finishing
    assert (returned.server, returned.person, returned.error, returned.connected) == ("notes", "user:ann", "", True)


async def test_a_retry_elsewhere_waits_for_the_holders_consent(relays: tuple[ConsentRelay, ConsentRelay]) -> None:
    """A 2026-07-28 retry that reached another process waits there until the holder's consent is done, and learns how
    it ended; it is told at once that nobody holds a consent of another person or server, or an unknown one."""
    holder, asker = relays
    flow = held(holder.consents)

    async def finish() -> None:
        await asyncio.sleep(0.5)
        flow.done.set()  # connected: done without an error

    began = time.monotonic()
    finishing = asyncio.create_task(finish())
    assert await asker.wait_for(flow.id, "user:ann", "notes", 10.0) is True
    assert 0.5 <= time.monotonic() - began < 2.0  # it waited for the consent, not for its 10 s
    await finishing

    declined = Flow("flow-2", "user:ann", "notes", "http://127.0.0.1:1", error="access_denied")
    holder.consents._by_id[declined.id] = declined
    declined.done.set()
    assert await asker.wait_for(declined.id, "user:ann", "notes", 10.0) is False

    others = (("flow-1", "user:bob", "notes"), ("flow-1", "user:ann", "jira"), ("no-such-flow", "user:ann", "notes"))
    for names in others:
        began = time.monotonic()
        assert await asker.wait_for(*names, 10.0) is False
        assert time.monotonic() - began < HOLDER_SECONDS + 1.5  # nobody holds it: the holder wait, not the 10 s
