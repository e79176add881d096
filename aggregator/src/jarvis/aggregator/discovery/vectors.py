"""Tool vectors kept on disk, keyed by a hash of the embedded text and the model, so restarts and
catalog refreshes never embed the same text twice. One SQLite file; a damaged one is replaced."""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import threading
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from jarvis.aggregator.discovery.embedding import Vectors

log = logging.getLogger(__name__)


def vector_key(model_id: str, text: str) -> bytes:
    return hashlib.sha256(f"{model_id}\0{text}".encode()).digest()[:20]


class VectorStore:
    """key -> float32 vector. Used from the embedding thread only; the lock guards a stray caller."""

    def __init__(self, path: Path | None, dimension: int) -> None:
        self.dimension = dimension
        self._lock = threading.Lock()
        self._db = self._open(path)

    def _open(self, path: Path | None) -> sqlite3.Connection:
        if path is not None:
            try:
                path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
                return self._connect(str(path))
            except sqlite3.DatabaseError as exc:
                log.warning("discovery vector cache %s unusable (%s): starting a new one", path, exc)
                path.unlink(missing_ok=True)
                try:
                    return self._connect(str(path))
                except sqlite3.DatabaseError:
                    pass
            except OSError as exc:
                log.warning("discovery vector cache %s unusable (%s): keeping vectors in memory", path, exc)
        return self._connect(":memory:")

    @staticmethod
    def _connect(where: str) -> sqlite3.Connection:
        db = sqlite3.connect(where, check_same_thread=False, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, vec BLOB NOT NULL)")
        return db

    def get(self, keys: list[bytes]) -> dict[bytes, Vectors]:
        found: dict[bytes, Vectors] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                chunk = keys[start : start + 500]
                marks = ",".join("?" * len(chunk))  # placeholders only: the keys are bound, never formatted in
                rows = self._db.execute(
                    f"SELECT key, vec FROM vectors WHERE key IN ({marks})",  # noqa: S608
                    chunk,
                ).fetchall()
                for key, blob in rows:
                    if len(blob) == 4 * self.dimension:
                        found[bytes(key)] = np.frombuffer(blob, dtype=np.float32)
        return found

    def put(self, items: Iterable[tuple[bytes, Vectors]]) -> None:
        rows = [(key, np.ascontiguousarray(vec, dtype=np.float32).tobytes()) for key, vec in items]
        with self._lock:
            try:
                self._db.executemany("INSERT OR REPLACE INTO vectors (key, vec) VALUES (?, ?)", rows)
            except sqlite3.Error as exc:  # a full disk loses the cache, never the search
                log.warning("discovery vectors not persisted: %s", exc)

    def close(self) -> None:
        with self._lock:
            self._db.close()
