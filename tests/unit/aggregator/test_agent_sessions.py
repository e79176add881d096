"""An agent's credential is good only while its session runs (decision 0058): the runtime is asked at most once per
cache interval per session, a finished session's answer is kept for good, and a credential bound to no single project
is refused without asking."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from jarvis.aggregator.oauth.agent_sessions import LiveAgentSessions
from jarvis.aggregator.tooling.principal import Principal
from jarvis.common.errors import NotFound, Unauthenticated, Unavailable

pytestmark = pytest.mark.anyio


@dataclass
class Answer:
    state: str


class Runtime:
    """The runtime's session states as a test sets them, counting the questions."""

    def __init__(self) -> None:
        self.states: dict[tuple[str, str], str] = {}
        self.asked = 0
        self.down = False

    async def get_session(self, project_id: str, session_id: str) -> Answer:
        self.asked += 1
        if self.down:
            raise Unavailable("runtime unreachable")
        if (project_id, session_id) not in self.states:
            raise NotFound(f"no session {session_id}")
        return Answer(self.states[(project_id, session_id)])


def agent(session: str, *scopes: str) -> Principal:
    return Principal(token_id="user:alice", name="alice", scopes=scopes, user="alice", agent_session=session)


async def test_a_running_sessions_credential_is_good_and_asked_about_once_per_interval() -> None:
    runtime = Runtime()
    runtime.states[("p1", "s1")] = "running"
    live = LiveAgentSessions(runtime, ttl=60)
    for _ in range(3):
        await live.check(agent("s1", "orchestrator@p1", "jarvis@p1"))
    assert runtime.asked == 1


@pytest.mark.parametrize("state", ["exited", "ended", "lost"])
async def test_a_finished_sessions_credential_is_refused_for_good(state: str) -> None:
    runtime = Runtime()
    runtime.states[("p1", "s1")] = "running"
    live = LiveAgentSessions(runtime, ttl=0)  # every check asks again while it runs
    await live.check(agent("s1", "orchestrator@p1"))
    runtime.states[("p1", "s1")] = state
    for _ in range(2):
        with pytest.raises(Unauthenticated, match=f"s1 is over \\({state}\\)"):
            await live.check(agent("s1", "orchestrator@p1"))
    assert runtime.asked == 2  # the finished answer is kept: a session never runs again


async def test_an_unknown_session_or_an_unbound_credential_is_refused() -> None:
    runtime = Runtime()
    live = LiveAgentSessions(runtime)
    with pytest.raises(Unauthenticated, match="s9 this credential was made for is gone"):
        await live.check(agent("s9", "orchestrator@p1"))
    with pytest.raises(Unauthenticated, match="exactly one project"):
        await live.check(agent("s1", "orchestrator@p1", "orchestrator@p2"))
    with pytest.raises(Unauthenticated, match="exactly one project"):
        await live.check(agent("s1", "orchestrator"))
    assert runtime.asked == 1


async def test_an_unreachable_runtime_is_not_taken_for_an_ended_session() -> None:
    """The gate answers 503 for the runtime's errors (as for the registry's): the agent may try again, and nothing is
    remembered, so the session's credential works again once the runtime answers."""
    runtime = Runtime()
    runtime.states[("p1", "s1")] = "running"
    runtime.down = True
    live = LiveAgentSessions(runtime, ttl=60)
    with pytest.raises(Unavailable):
        await live.check(agent("s1", "orchestrator@p1"))
    runtime.down = False
    await live.check(agent("s1", "orchestrator@p1"))
    assert runtime.asked == 2
