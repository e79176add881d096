"""Dense retrieval: each tool's embedding, computed off the request path, and cosine scores for a query.

One background thread loads the model, then embeds whatever the catalog adds: first from the
vector store (texts embedded by an earlier run), then with the model, one text at a time. Until every
tool of the catalog has its vector, `scores` answers None and the index ranks lexically, so a
start, or a refresh that brings thousands of new tools, never makes tool_find wait or stall.
When the model cannot load, `status` says why and search stays lexical for good.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from jarvis.aggregator.discovery.embedding import ModelUnavailable, Vectors
from jarvis.aggregator.discovery.ensemble import Ensemble, TextEncoder
from jarvis.aggregator.discovery.entry import ToolEntry, schema_terms
from jarvis.aggregator.discovery.text import words
from jarvis.aggregator.discovery.vectors import VectorStore, vector_key
from jarvis.aggregator.tooling.tool import MAX_SUMMARY

log = logging.getLogger(__name__)
# Texts per task handed to a worker (the model reads each alone): few enough that stop() never waits long
# for the task in flight.
BATCH = 16
# Texts taken from the pending set per round (and per read of the vector store).
ROUND = 1024
# Model calls in flight while embedding. Each runs on one core at the thread's priority (nice 19 unless
# benchmarking), so a second one only uses a core the machine leaves idle.
WORKERS = 2
# Tokens of a query the model reads: as many as of a tool's text. The query's embedding is most of tool_find's
# time and grows with its length, but capping it at 48 cost 0.019 recall@5 on the LiveMCPBench questions (one in
# five is longer), measured with the query embedded alone as tool_find does.
QUERY_TOKENS = 128
# A description past this says nothing the model would read (it keeps 128 tokens); cut before tokenising.
MAX_TEXT_CHARS = 1500
QUERY_CACHE = 1024
# Threads that embed a request's parts (and multiply each by the tools' matrix) while the request's thread
# scores its words: on the request path, so at normal priority, one intra-op thread each like every call.
QUERY_WORKERS = 2
# Of a tool's context (a Jarvis tool's summary first, its server's or surface's words after) the embedding reads as
# much as a summary may hold, so a summary is always read whole.
CONTEXT_CHARS = MAX_SUMMARY


def dense_text(entry: ToolEntry) -> str:
    """What the model reads for a tool: its name in words, its owner, what it does, what it takes, and
    the start of its owner's description (worth +0.01 to +0.02 recall@5 on LiveMCPBench's tasks)."""
    params, _ = schema_terms(entry.input_schema)
    name = " ".join(words(entry.tool))
    owner = " ".join(words(entry.source))
    text = f"{name} ({owner}): {entry.description.strip()}" if owner else f"{name}: {entry.description.strip()}"
    if params:
        text += " Parameters: " + ", ".join(" ".join(words(p)) for p in dict.fromkeys(params))
    if entry.context.strip():
        text += " " + entry.context.strip()[:CONTEXT_CHARS]
    return text[:MAX_TEXT_CHARS]


@dataclass(frozen=True)
class DenseStatus:
    state: str  # loading, embedding, ready, unavailable, off
    detail: str = ""
    embedded: int = 0
    tools: int = 0


@dataclass(frozen=True)
class DenseScores:
    """One row per tool: its vector (the stored matrix), or its cosine to a query (a search's answer: one
    value, or one column per part of a request)."""

    names: list[str]
    rows: dict[str, int]
    values: Vectors


Loader = Callable[[], TextEncoder]


class PendingQuery:
    """A request's cosines being computed on the query pool (`DenseIndex.query`)."""

    def __init__(self, table: DenseScores, parts: list[Future[tuple[Vectors, Vectors]]]) -> None:
        self._table = table
        self._parts = parts

    def result(self) -> DenseScores:
        """One column per tool row: the whole request's cosines, then each part's when there are several.
        The whole request's vector is the normalised sum of its parts', so its cosines are the sum of theirs
        divided by that sum's norm: no product with the matrix for it."""
        done = [part.result() for part in self._parts]
        columns = np.column_stack([cosines for _, cosines in done])
        if len(done) > 1:
            whole = np.sum([vector for vector, _ in done], axis=0)
            norm = max(float(np.linalg.norm(whole)), 1e-12)
            columns = np.column_stack([columns.sum(axis=1) / np.float32(norm), columns])
        return DenseScores(self._table.names, self._table.rows, columns)


class DenseIndex:
    """Vectors by tool name, kept current by a worker thread; `scores` for a query."""

    def __init__(self, cache: Path | None, loader: Loader | None = None, *, lowest_priority: bool = True) -> None:
        self._cache = cache
        self._lowest_priority = lowest_priority
        self._loader = loader or Ensemble
        self._lock = threading.Condition()
        self._texts: dict[str, str] = {}  # name -> text wanted
        self._vectors: dict[str, Vectors] = {}  # name -> vector of its current text
        self._pending: set[str] = set()
        self._by_text: dict[str, Vectors] = {}  # text -> vector, shared by tools that read the same
        self._matrix: DenseScores | None = None
        self._queries: OrderedDict[str, Vectors] = OrderedDict()
        self._model: TextEncoder | None = None
        self._store: VectorStore | None = None
        self._state, self._detail = "loading", ""
        self._stopped = False
        self._thread: threading.Thread | None = None
        self._query_pool: ThreadPoolExecutor | None = None
        self.last_batch_seconds = 0.0

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="discovery-embedding", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            self._lock.notify_all()
            pool, self._query_pool = self._query_pool, None
        if pool is not None:
            pool.shutdown()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None
        if self._store is not None:
            self._store.close()
            self._store = None

    def wait_ready(self, timeout: float) -> bool:
        """Block until every tool has its vector (or the model gave up); for benchmarks and tests."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while (self._state == "loading" or self._pending) and self._state != "unavailable":
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._lock.wait(min(left, 0.5))
            return self._state == "ready"

    def status(self) -> DenseStatus:
        with self._lock:
            state = self._state
            if state == "ready" and self._pending:
                state = "embedding"
            return DenseStatus(state, self._detail, len(self._vectors), len(self._texts))

    # ------------------------------------------------------------ catalog changes

    def upsert(self, entries: Iterable[ToolEntry]) -> None:
        with self._lock:
            for entry in entries:
                text = dense_text(entry)
                if self._texts.get(entry.name) == text:
                    continue
                self._texts[entry.name] = text
                known = self._by_text.get(text)
                if known is not None:
                    self._vectors[entry.name] = known
                    self._pending.discard(entry.name)
                else:
                    self._vectors.pop(entry.name, None)
                    self._pending.add(entry.name)
                self._matrix = None
            self._lock.notify_all()

    def remove(self, names: Iterable[str]) -> None:
        with self._lock:
            for name in names:
                if self._texts.pop(name, None) is not None:
                    self._vectors.pop(name, None)
                    self._pending.discard(name)
                    self._matrix = None

    # ------------------------------------------------------------ search

    @property
    def ready(self) -> bool:
        """Whether every tool has its vector (read without the lock: `query` checks again)."""
        return self._model is not None and not self._pending and bool(self._texts)

    def scores(self, query: str) -> DenseScores | None:
        """Every tool's cosine to `query`, or None while any tool lacks its vector, or without a model."""
        pending = self.query([query])
        if pending is None:
            return None
        found = pending.result()
        return DenseScores(found.names, found.rows, np.ascontiguousarray(found.values[:, 0]))

    def query(self, parts: list[str]) -> PendingQuery | None:
        """Start computing every tool's cosine to a request said in `parts` (one or more), or None while any
        tool lacks its vector, or without a model. Each part is embedded alone, and multiplied by the tools'
        matrix, on the query pool: parts run side by side (ONNX Runtime and numpy release the GIL) while the
        caller scores the request's words. The request's vector is the sum of its parts', so a request costs
        what embedding it whole would (the sum ranked as well as the whole request's own vector on the dev
        data)."""
        ready = self._table()
        if ready is None:
            return None
        table, model = ready
        with self._lock:
            if self._stopped:  # stop() shut the pool down; a search still in flight ranks lexically
                return None
            if self._query_pool is None:
                self._query_pool = ThreadPoolExecutor(QUERY_WORKERS, "discovery-query")
            pool = self._query_pool
        # Longest first: the model's time grows with a part's length, so the last to finish is a short one.
        longest_first = sorted(range(len(parts)), key=lambda i: -len(parts[i]))
        started = {i: pool.submit(self._part_cosines, table.values, model, parts[i]) for i in longest_first}
        return PendingQuery(table, [started[i] for i in range(len(parts))])

    def _part_cosines(self, matrix: Vectors, model: TextEncoder, part: str) -> tuple[Vectors, Vectors]:
        vector = self._query_vector(model, part)
        # einsum's own loop, not BLAS: as fast as one BLAS thread here, and OpenBLAS's threads spin after each
        # call, burning a core that the other query thread (or another request) needs.
        return vector, np.einsum("ij,j->i", matrix, vector)

    def _table(self) -> tuple[DenseScores, TextEncoder] | None:
        """The matrix of every tool's vector and the model, once every tool has its vector."""
        with self._lock:
            if self._model is None or self._pending or not self._texts:
                return None
            if self._matrix is None:
                names = list(self._vectors)
                matrix = np.stack([self._vectors[n] for n in names])
                self._matrix = DenseScores(names, {n: i for i, n in enumerate(names)}, matrix)
            return self._matrix, self._model

    def _query_vector(self, model: TextEncoder, query: str) -> Vectors:
        with self._lock:
            cached = self._queries.get(query)
            if cached is not None:
                self._queries.move_to_end(query)
                return cached
        vector: Vectors = model.embed([query[:MAX_TEXT_CHARS]], max_tokens=QUERY_TOKENS)[0]
        with self._lock:
            self._queries[query] = vector
            while len(self._queries) > QUERY_CACHE:
                self._queries.popitem(last=False)
        return vector

    # ------------------------------------------------------------ the worker

    def _lower_priority(self) -> None:
        # The lowest CPU priority for this thread only (Linux threads have their own nice value): embedding
        # a catalog must never slow requests, start-up, or the rest of the machine.
        # (The benchmark turns this off to time the embedding itself on a shared machine.)
        if self._lowest_priority:
            with contextlib.suppress(OSError, AttributeError):
                os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)

    def _run(self) -> None:
        self._lower_priority()
        try:
            started = time.perf_counter()
            model = self._loader()
            store = VectorStore((self._cache or default_cache()) / "vectors.sqlite", model.dimension)
        except ModelUnavailable as exc:
            self._give_up(str(exc))
            return
        except Exception as exc:  # a broken install must leave lexical search working, and say why
            log.exception("discovery embedding model failed to load")
            self._give_up(f"the embedding model failed to load ({type(exc).__name__}: {exc})")
            return
        log.info("discovery embedding model loaded", extra={"seconds": round(time.perf_counter() - started, 2)})
        with self._lock:
            self._model, self._store, self._state = model, store, "ready"
            self._lock.notify_all()
        with ThreadPoolExecutor(WORKERS, "discovery-embedding", initializer=self._lower_priority) as pool:
            while True:
                with self._lock:
                    while not self._pending and not self._stopped:
                        self._lock.wait()
                    if self._stopped:
                        pool.shutdown(cancel_futures=True)
                        return
                    work = {name: self._texts[name] for name in list(self._pending)[:ROUND]}
                try:
                    self._embed(model, store, work, pool)
                except Exception as exc:
                    log.exception("discovery embedding failed")
                    self._give_up(f"embedding tools failed ({type(exc).__name__}: {exc})")
                    return

    def _embed(self, model: TextEncoder, store: VectorStore, work: dict[str, str], pool: ThreadPoolExecutor) -> None:
        texts = list(dict.fromkeys(work.values()))
        keys = {text: vector_key(model.model_id, text) for text in texts}
        stored = store.get(list(keys.values()))
        found = {text: stored[key] for text, key in keys.items() if key in stored}
        missing = [text for text in texts if text not in found]
        chunks = [missing[start : start + BATCH] for start in range(0, len(missing), BATCH)]
        for start in range(0, len(chunks), WORKERS):
            if self._stopped:
                return
            began = time.perf_counter()
            calls = [(chunk, pool.submit(model.embed, chunk)) for chunk in chunks[start : start + WORKERS]]
            for chunk, call in calls:
                vectors = call.result()
                store.put((keys[text], vector) for text, vector in zip(chunk, vectors, strict=True))
                found.update(zip(chunk, vectors, strict=True))
            self.last_batch_seconds = time.perf_counter() - began
        with self._lock:
            self._by_text.update(found)
            for name, text in work.items():
                # The catalog may have changed the tool's text meanwhile: then it stays pending.
                if self._texts.get(name) == text:
                    self._vectors[name] = found[text]
                    self._pending.discard(name)
            self._matrix = None
            self._lock.notify_all()

    def _give_up(self, why: str) -> None:
        log.warning("discovery search is lexical only: %s", why)
        with self._lock:
            self._state, self._detail = "unavailable", why
            self._pending.clear()
            self._lock.notify_all()


def default_cache() -> Path:
    """Where tool vectors go when no data directory is configured."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "jarvis" / "discovery"
