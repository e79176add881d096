"""Jarvis's cache of results its servers said stay fresh (downstream/hosting/result_cache.py), on a clock the test
moves: what is kept, for how long, under which key, and what ends it early."""

from __future__ import annotations

from typing import Any

from jarvis.aggregator.downstream.hosting.result_cache import ResultCache

MODERN = "2026-07-28"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def key_of(cache: ResultCache, server: str, method: str, params: dict[str, Any], era: str, context: str = "") -> Any:
    key = cache.key(server, method, params, era, context)
    assert key is not None, (method, params)
    return key


def listing(ttl: Any, **extra: Any) -> dict[str, Any]:
    return {"resources": [{"uri": "toy://a", "name": "a"}], "ttlMs": ttl, "cacheScope": "public", **extra}


def test_a_result_is_served_for_its_ttl_with_the_time_it_has_left() -> None:
    clock = Clock()
    cache = ResultCache(clock=clock)
    key = key_of(cache, "notes", "resources/list", {"_meta": {"x": 1}}, MODERN)
    cache.put(key, listing(2000))
    clock.now += 0.5
    served = cache.get(key)
    assert served is not None
    assert served["ttlMs"] == 1500
    served["resources"].clear()  # the caller's copy: the stored result is not changed through it
    clock.now += 1.0
    again = cache.get(key)
    assert again is not None
    assert again["resources"] == [{"uri": "toy://a", "name": "a"}]
    clock.now += 0.6
    assert cache.get(key) is None
    assert cache.served["resources/list"] == 2


def test_the_key_is_the_method_the_parameters_and_the_era_not_the_envelope() -> None:
    cache = ResultCache(clock=Clock())
    first = key_of(cache, "notes", "resources/read", {"uri": "toy://a", "_meta": {"a": 1}}, MODERN)
    cache.put(first, {"contents": [], "ttlMs": 1000})
    assert (
        cache.get(key_of(cache, "notes", "resources/read", {"uri": "toy://a", "_meta": {"b": 2}}, MODERN)) is not None
    )
    for other in (
        key_of(cache, "notes", "resources/read", {"uri": "toy://b"}, MODERN),
        key_of(cache, "other", "resources/read", {"uri": "toy://a"}, MODERN),
        key_of(cache, "notes", "resources/read", {"uri": "toy://a"}, "2025-11-25"),
        key_of(cache, "notes", "resources/read", {"uri": "toy://a"}, MODERN, context="ann"),
    ):
        assert cache.get(other) is None


def test_what_is_never_kept() -> None:
    cache = ResultCache(clock=Clock())
    assert cache.key("notes", "tools/call", {"name": "x"}, MODERN) is None
    assert cache.key("notes", "resources/read", {"uri": "a", "requestState": "s"}, MODERN) is None
    assert cache.key("notes", "resources/read", {"uri": "a", "inputResponses": {}}, MODERN) is None
    key = key_of(cache, "notes", "resources/list", {}, MODERN)
    for result in (listing(0), listing(None), listing(-5), listing(True), listing(5000, resultType="input_required")):
        cache.put(key, result)
        assert cache.get(key) is None
    assert len(cache) == 0


def test_a_change_or_an_update_ends_reuse_early() -> None:
    cache = ResultCache(clock=Clock())
    listed = key_of(cache, "notes", "resources/list", {}, MODERN)
    read_a = key_of(cache, "notes", "resources/read", {"uri": "toy://a"}, MODERN)
    read_b = key_of(cache, "notes", "resources/read", {"uri": "toy://b"}, MODERN)
    elsewhere = key_of(cache, "other", "resources/list", {}, MODERN)
    for key in (listed, read_a, read_b, elsewhere):
        cache.put(key, listing(60000))
    cache.forget_reads("notes", "toy://a")
    assert cache.get(read_a) is None
    assert cache.get(read_b) is not None
    cache.forget_server("notes")
    assert cache.get(listed) is None
    assert cache.get(read_b) is None
    assert cache.get(elsewhere) is not None


def test_the_store_is_bounded_in_bytes_least_recently_used_first() -> None:
    cache = ResultCache(max_bytes=3200, clock=Clock())  # each read below is about 750 bytes
    keys = [key_of(cache, "notes", "resources/read", {"uri": f"toy://{n}"}, MODERN) for n in range(5)]
    for key in keys:
        cache.put(key, {"contents": [{"uri": "x", "text": "y" * 700}], "ttlMs": 60000})
    assert len(cache) == 4
    assert cache.get(keys[0]) is None
    assert cache.get(keys[4]) is not None
    huge = key_of(cache, "notes", "resources/read", {"uri": "toy://huge"}, MODERN)
    cache.put(huge, {"contents": [{"uri": "x", "text": "y" * 900}], "ttlMs": 60000})
    assert cache.get(huge) is None  # over a quarter of the store: not kept
