"""The sign-in signing key: made once in the shared directory, owner-only, the same for every worker that loads it,
even when several start together (issue 31 item 2); the authorization server signs with these SigningKeys."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from jarvis.aggregator.oauth import access_tokens
from jarvis.aggregator.oauth.keys import SigningKeys


def test_workers_starting_together_share_one_key(tmp_path: Path) -> None:
    with ThreadPoolExecutor(4) as pool:
        loaded = list(pool.map(lambda _: SigningKeys.load(tmp_path / "keys"), range(4)))
    assert len({k.listing()[0][0] for k in loaded}) == 1
    assert [p.name for p in (tmp_path / "keys").iterdir()] == ["signing-key.pem"]
    assert (tmp_path / "keys" / "signing-key.pem").stat().st_mode & 0o777 == 0o600
    made = access_tokens.issue(
        loaded[0], issuer="i", subject="alice", audience="a", scopes=["jarvis"], client_id="c", ttl_seconds=60
    )
    assert access_tokens.verify(loaded[3], made, issuer="i", audience="a").subject == "alice"
    published = loaded[2].jwks()["keys"]
    assert [k["kid"] for k in published] == [loaded[0].listing()[0][0]]
    assert "d" not in published[0]  # the public half only
