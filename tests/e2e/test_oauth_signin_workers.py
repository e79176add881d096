"""Sign-in across `jarvis up --workers 2` (issue 31 item 2): each step on a connection of its own lands on either
worker, and every sign-in completes, since pending authorizations, consents, codes and refresh tokens live in the
registry and the signing key in one shared directory."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx2
import pytest

from tests.support.redis_server import redis_url
from tests.support.signin import sign_in_via_jarvis, signin_jarvis
from tests.support.stack import RunningJarvis


@pytest.fixture(scope="module")
def workers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningJarvis]:
    with (
        redis_url(tmp_path_factory.mktemp("redis")) as redis,
        signin_jarvis(tmp_path_factory, "--workers", "2", env={"JARVIS_REDIS_URL": redis}) as running,
    ):
        yield running


def test_sign_in_completes_whichever_worker_answers_each_step(workers: RunningJarvis) -> None:
    fresh = httpx2.Limits(max_keepalive_connections=0)
    with httpx2.Client(limits=fresh) as http:
        # "Jarvis is up" is the first worker's word; the second may still be starting (it is a process of its own).
        pids: set[int] = set()
        deadline = time.monotonic() + 60
        while len(pids) < 2 and time.monotonic() < deadline:
            pids |= {http.get(workers.url("/livez")).json()["pid"] for _ in range(20)}
            time.sleep(0.2)
        kids = {tuple(k["kid"] for k in http.get(workers.url("/oauth/jwks.json")).json()["keys"]) for _ in range(10)}
    assert len(pids) == 2, "both workers should answer on the one port"
    assert len(kids) == 1, "every worker publishes the same signing key"
    for _ in range(3):
        client_id, tokens, _ = sign_in_via_jarvis(workers, "alice", "jarvis", keepalive=False)
        assert tokens.status_code == 200, tokens.text
        form = {"grant_type": "refresh_token", "refresh_token": tokens.json()["refresh_token"], "client_id": client_id}
        assert httpx2.post(workers.url("/oauth/token"), data=form).status_code == 200
