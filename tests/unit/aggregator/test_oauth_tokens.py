"""Signing keys shared through a directory, and the audience-bound access tokens signed with them (issue 31 item 1)."""

from __future__ import annotations

import base64
import json
import os
import stat
import time
from pathlib import Path

import pytest

from jarvis.aggregator.oauth import access_tokens
from jarvis.aggregator.oauth.keys import InvalidToken, SigningKeys

ISSUER = "https://jarvis.example.test"
AUDIENCE = ISSUER + "/mcp/jarvis"


def token(keys: SigningKeys, ttl: int = 300, overrides: dict[str, str] | None = None) -> str:
    fields = {"issuer": ISSUER, "audience": AUDIENCE, **(overrides or {})}
    return access_tokens.issue(
        keys,
        issuer=fields["issuer"],
        subject="alice",
        audience=fields["audience"],
        scopes=["jarvis", "orchestrator@p1"],
        client_id="c1",
        ttl_seconds=ttl,
        email="alice@example.test",
        groups=["dev"],
    )


def test_keys_are_owner_only_files(tmp_path: Path) -> None:
    SigningKeys.load(tmp_path / "keys")
    assert stat.S_IMODE((tmp_path / "keys").stat().st_mode) == 0o700
    (key,) = (tmp_path / "keys").glob("*.pem")
    assert stat.S_IMODE(key.stat().st_mode) == 0o600


def test_a_token_verifies_with_its_claims(tmp_path: Path) -> None:
    keys = SigningKeys.load(tmp_path)
    claims = access_tokens.verify(keys, token(keys), issuer=ISSUER, audience=AUDIENCE)
    assert (claims.subject, claims.scopes, claims.client_id) == ("alice", ("jarvis", "orchestrator@p1"), "c1")
    assert claims.groups == ("dev",)
    assert claims.email == "alice@example.test"


def test_an_agent_credential_carries_the_trace_of_its_spawn(tmp_path: Path) -> None:
    """Decision 0066: the agent's calls with it, naming no trace of their own, join its spawn's trace."""
    keys = SigningKeys.load(tmp_path)
    spawn = {"traceparent": "00-" + "a" * 32 + "-" + "b" * 16 + "-01"}
    minted = access_tokens.issue(
        keys, issuer=ISSUER, subject="alice", audience=AUDIENCE, scopes=[], client_id="c1", ttl_seconds=60, trace=spawn
    )
    assert access_tokens.verify(keys, minted, issuer=ISSUER, audience=AUDIENCE).trace == tuple(spawn.items())
    assert access_tokens.verify(keys, token(keys), issuer=ISSUER, audience=AUDIENCE).trace == ()


@pytest.mark.parametrize(
    ("overrides", "why"),
    [
        ({"audience": ISSUER + "/mcp/orchestrator"}, "another resource"),
        ({"issuer": "https://evil.example.test"}, "another issuer"),
    ],
)
def test_wrong_audience_or_issuer_is_refused(tmp_path: Path, overrides: dict[str, str], why: str) -> None:
    keys = SigningKeys.load(tmp_path)
    with pytest.raises(InvalidToken, match=why):
        access_tokens.verify(keys, token(keys, overrides=overrides), issuer=ISSUER, audience=AUDIENCE)


def test_expired_tampered_and_foreign_tokens_are_refused(tmp_path: Path) -> None:
    keys = SigningKeys.load(tmp_path / "ours")
    with pytest.raises(InvalidToken, match="expired"):
        access_tokens.verify(keys, token(keys, ttl=-120), issuer=ISSUER, audience=AUDIENCE)
    good = token(keys)
    with pytest.raises(InvalidToken, match="signature"):
        access_tokens.verify(keys, good[:-4] + "AAAA", issuer=ISSUER, audience=AUDIENCE)
    other = SigningKeys.load(tmp_path / "theirs")
    with pytest.raises(InvalidToken):
        access_tokens.verify(keys, token(other), issuer=ISSUER, audience=AUDIENCE)
    with pytest.raises(InvalidToken):
        access_tokens.verify(keys, "not.a.jwt", issuer=ISSUER, audience=AUDIENCE)


def test_rotation_keeps_old_tokens_until_pruned(tmp_path: Path) -> None:
    keys = SigningKeys.load(tmp_path)
    old = token(keys)
    first_kid = keys.jwks()["keys"][0]["kid"]
    for path in tmp_path.glob("*.pem"):  # the first key was made an hour ago
        os.utime(path, (time.time() - 3600, time.time() - 3600))
    new_kid = keys.rotate()
    assert new_kid != first_kid
    assert {k["kid"] for k in keys.jwks()["keys"]} == {first_kid, new_kid}
    assert access_tokens.verify(keys, old, issuer=ISSUER, audience=AUDIENCE).subject == "alice"
    fresh = token(keys)
    assert keys.verify(fresh)
    assert fresh != old
    assert keys.prune(max_age=600) == [first_kid]
    assert [k["kid"] for k in keys.jwks()["keys"]] == [new_kid]
    with pytest.raises(InvalidToken):
        access_tokens.verify(keys, old, issuer=ISSUER, audience=AUDIENCE)
    assert access_tokens.verify(keys, fresh, issuer=ISSUER, audience=AUDIENCE).subject == "alice"


def test_another_replica_sees_a_rotation(tmp_path: Path) -> None:
    here, there = SigningKeys.load(tmp_path), SigningKeys.load(tmp_path)
    kid = here.rotate()
    assert kid in {k["kid"] for k in there.jwks()["keys"]}
    assert there.verify(here.sign({"sub": "x"}))["sub"] == "x"


def test_a_directory_rewritten_whole_still_signs_with_the_newest_rotated_key(tmp_path: Path) -> None:
    """A Kubernetes Secret (or a copy) rewrites every file at once, in any order: rotated keys keep their order by the
    time in their names, after the first key, so every replica signs with the newest whatever the mtimes say."""
    keys = SigningKeys.load(tmp_path)
    keys.rotate()
    newest = keys.rotate()
    now = time.time()
    for age, path in enumerate(sorted(tmp_path.glob("*.pem"), reverse=True)):
        os.utime(path, (now - 3600 + age, now - 3600 + age))  # the newest key's file now looks the oldest
    (tmp_path / "signing-key.pem").touch()  # and the first key's the newest
    mounted = SigningKeys.load(tmp_path)
    assert mounted.listing()[-1][0] == newest
    header = json.loads(base64.urlsafe_b64decode(mounted.sign({"sub": "x"}).split(".")[0] + "=="))
    assert header["kid"] == newest


def test_a_directory_where_no_key_can_be_made_says_what_to_do(tmp_path: Path) -> None:
    """A keys directory that holds no key and cannot take one (a Kubernetes Secret mounted without a key; here, as
    root writes anywhere, a path under a file): the aggregator stops with a reason, not a bare OS error."""
    (tmp_path / "file").write_text("")
    with pytest.raises(OSError, match=r"no signing key in .*oauth-keys rotate"):
        SigningKeys.load(tmp_path / "file" / "keys")


def test_keys_in_a_kubernetes_secret_layout_sign_and_follow_an_update(tmp_path: Path) -> None:
    """A Secret volume as the kubelet writes it: the files in a timestamped directory, `..data` a link to it, and
    each key a link through `..data`; an update writes a new directory and swaps `..data`. Jarvis reads the keys
    through the links, signs with the newest rotated one, and a running process sees the update at its next call."""
    source = tmp_path / "made"
    made = SigningKeys.load(source)
    first_rotated = made.rotate()
    mounted = tmp_path / "mounted"
    mounted.mkdir()

    def publish(version: str) -> None:
        data = mounted / f"..{version}"
        data.mkdir()
        for key in source.glob("*.pem"):
            (data / key.name).write_bytes(key.read_bytes())  # rewritten: every file gets a new mtime
        (mounted / "..data_tmp").symlink_to(data.name)
        (mounted / "..data_tmp").rename(mounted / "..data")
        for key in source.glob("*.pem"):
            if not (mounted / key.name).is_symlink():
                (mounted / key.name).symlink_to(f"..data/{key.name}")

    publish("2026_11_29_01")
    running = SigningKeys.load(mounted)
    assert running.listing()[-1][0] == first_rotated
    assert len([p for p in mounted.iterdir() if not p.name.startswith("..")]) == 2
    second_rotated = made.rotate()
    time.sleep(0.01)  # the directory's mtime must move on for the running process to look again
    publish("2026_11_29_02")
    # No forced reload: the next signature and JWKS of the running process already follow the update.
    header = json.loads(base64.urlsafe_b64decode(running.sign({"sub": "x"}).split(".")[0] + "=="))
    assert header["kid"] == second_rotated
    assert {k["kid"] for k in running.jwks()["keys"]} == {k[0] for k in made.listing()}
