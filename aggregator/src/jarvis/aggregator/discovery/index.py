"""The search index over the tool catalog: BM25F over weighted fields, updated in place.

Each tool is a document with fields (name, keywords, description, parameters, enum values, owner
context). A term's weight in a document is BM25F's: field counts are length-normalised per field,
weighted, summed, then saturated once (k1), so a word repeated across fields does not count twice
as much; the score adds idf times that weight over the query's terms.

Postings hold the saturated weights, so a search only adds up a few lists. Those weights depend on
the catalog's average field lengths, which an incremental update barely moves: the averages are
taken when the index is (re)normalised and kept until they drift by more than `RENORMALISE_DRIFT`,
when every posting is recomputed. idf is computed at search time from live counts, so it is exact.

Adding up postings costs Python a few hundred nanoseconds each, and a long query over a large
catalog touches tens of thousands. So a search works term by term from the rarest (highest idf):
terms are added up in full until `FULL_POSTINGS` postings have been read, and the remaining, most
common terms only add to the `KEEP` best documents so far that the caller may see (Moffat & Zobel's
"continue" strategy). Only documents that match nothing but common words can be missed; a query
keeps its `MAX_TERMS` rarest terms.

With a `DenseIndex` whose vectors are ready, a search is hybrid: both scores are min-max normalised
over the catalog and added with the weights `LEXICAL_WEIGHT` and `DENSE_WEIGHT` (chosen on the
MetaTool dev and LiveMCPBench task questions: docs/decisions/0014-discovery-hybrid-retrieval.md). Fusion and the
caller's filter are numpy arrays indexed by document id, so every tool is fused, and a narrowly
scoped caller costs no more than one who sees everything. A request of several sentences ("Find the
route. Then list the charging stations on it.") is also scored sentence by sentence, and each tool gets
its best sentence's fused score added (`PART_WEIGHT`), so one step's many tools do not bury another's.
The hybrid reads every posting of the query's terms, in numpy (no early stop: it costs less than the
model), and scores the words while the dense index embeds the sentences on its query threads.
"""

from __future__ import annotations

import heapq
import math
import weakref
from collections import Counter
from collections.abc import Callable, Iterable
from operator import itemgetter

import numpy as np
import numpy.typing as npt

from jarvis.aggregator.discovery.dense import DenseIndex, DenseScores
from jarvis.aggregator.discovery.entry import Hit, ToolEntry
from jarvis.aggregator.discovery.fields import FIELDS, IndexedDoc, field_counts
from jarvis.aggregator.discovery.text import analyze, clauses, normalize_name

_SPECS = tuple(FIELDS.values())
K1 = 1.2
RENORMALISE_DRIFT = 0.1
FULL_POSTINGS = 4000
KEEP = 256
MAX_TERMS = 32
# A query that is exactly a tool's name ("jarvis_server") wants that tool first.
EXACT_NAME_BONUS = 100.0
LEXICAL_WEIGHT = 0.25
DENSE_WEIGHT = 0.75
# A request of several sentences adds, to each tool's score for the whole request, this times its best score
# for any one sentence (tuned on MetaTool and LiveMCPBench: docs/decisions/0014-discovery-hybrid-retrieval.md).
PART_WEIGHT = 1.0
# When no word of the query is in the catalog, a tool needs at least this cosine to be found by meaning
# alone: below it MiniLM sees unrelated text, and "zzqxv" should find nothing rather than the least
# unlike tools. (Applied to every tool, it cost 0.003 recall@5 on MetaTool.)
DENSE_FLOOR = 0.2


class ToolIndex:
    """An inverted index of ToolEntry documents: `upsert`, `remove`, `search`."""

    def __init__(self, entries: Iterable[ToolEntry] = (), dense: DenseIndex | None = None) -> None:
        self.dense = dense
        self._ids: dict[str, int] = {}
        self._docs: dict[int, IndexedDoc] = {}
        self._free: list[int] = []
        self._next = 0
        self._postings: dict[str, dict[int, float]] = {}  # term -> doc -> saturated BM25F weight
        self._length_sums = [0] * len(_SPECS)
        self._averages: list[float] | None = None  # as of the last normalisation
        self._by_normal_name: dict[str, str] = {}
        self.version = 0  # changes whenever an entry is added, replaced or removed
        self._rows_cache: tuple[list[str], int, npt.NDArray[np.int64]] | None = None
        self._arrays: dict[str, tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]] = {}
        self._arrays_version = -1
        self._masks: weakref.WeakKeyDictionary[Callable[[ToolEntry], bool], tuple[int, npt.NDArray[np.bool_]]] = (
            weakref.WeakKeyDictionary()
        )
        self.upsert(entries)

    def __len__(self) -> int:
        return len(self._docs)

    def __contains__(self, name: object) -> bool:
        return name in self._ids

    def get(self, name: str) -> ToolEntry | None:
        doc = self._ids.get(name)
        return self._docs[doc].entry if doc is not None else None

    def entries(self) -> list[ToolEntry]:
        return [d.entry for d in self._docs.values()]

    def lookup(self, name: str) -> ToolEntry | None:
        """The entry called `name`, tolerating case and separator differences ("Jarvis-Server")."""
        found = self.get(name)
        if found is None:
            actual = self._by_normal_name.get(normalize_name(name))
            found = self.get(actual) if actual else None
        return found

    def upsert(self, entries: Iterable[ToolEntry]) -> int:
        """Add or replace entries (by name); returns how many were added or changed."""
        added: list[int] = []
        shared: dict[str, Counter[str]] = {}
        for entry in entries:
            if self.get(entry.name) == entry:
                continue
            self._drop(entry.name)
            added.append(self._add(entry, shared))
        if added and self.dense is not None:
            self.dense.upsert(self._docs[doc].entry for doc in added)
        if added:
            self.version += 1
            if not self._renormalise_if_drifted():
                for doc in added:
                    self._post(doc)
        return len(added)

    def remove(self, names: Iterable[str]) -> int:
        """Remove entries by name; unknown names are ignored. Returns how many were removed."""
        gone = [name for name in names if self._drop(name)]
        removed = len(gone)
        if gone and self.dense is not None:
            self.dense.remove(gone)
        if removed:
            self.version += 1
            self._renormalise_if_drifted()
        return removed

    def _add(self, entry: ToolEntry, shared: dict[str, Counter[str]]) -> int:
        if self._free:
            doc = self._free.pop()
        else:
            doc, self._next = self._next, self._next + 1
        fields = field_counts(entry, shared)
        lengths = [sum(c.values()) for c in fields]
        self._docs[doc] = IndexedDoc(entry, fields, lengths)
        self._ids[entry.name] = doc
        self._by_normal_name.setdefault(normalize_name(entry.name), entry.name)
        self._length_sums = [a + b for a, b in zip(self._length_sums, lengths, strict=True)]
        return doc

    def _drop(self, name: str) -> bool:
        doc = self._ids.pop(name, None)
        if doc is None:
            return False
        removed = self._docs.pop(doc)
        normal = normalize_name(name)
        if self._by_normal_name.get(normal) == name:
            del self._by_normal_name[normal]
        self._length_sums = [a - b for a, b in zip(self._length_sums, removed.lengths, strict=True)]
        for term in {t for counts in removed.fields for t in counts}:
            weights = self._postings.get(term)
            if weights is not None:
                weights.pop(doc, None)
                if not weights:
                    del self._postings[term]
        self._free.append(doc)
        return True

    def _renormalise_if_drifted(self) -> bool:
        n = len(self._docs)
        current = [total / n if n else 0.0 for total in self._length_sums]
        frozen = self._averages
        if frozen is not None and all(
            abs(c - f) <= RENORMALISE_DRIFT * max(f, 1.0) for c, f in zip(current, frozen, strict=True)
        ):
            return False
        self._averages = current
        self._postings = {}
        for doc in self._docs:
            self._post(doc)
        return True

    def _post(self, doc: int) -> None:
        """Add `doc`'s saturated BM25F weights to the postings, under the current averages."""
        averages = self._averages or [1.0] * len(_SPECS)
        record = self._docs[doc]
        pseudo_tf: dict[str, float] = {}
        for spec, counts, length, average in zip(_SPECS, record.fields, record.lengths, averages, strict=True):
            if not counts:
                continue
            scale = spec.weight / (1 - spec.length_norm + spec.length_norm * length / (average or 1.0))
            for term, tf in counts.items():
                pseudo_tf[term] = pseudo_tf.get(term, 0.0) + tf * scale
        postings = self._postings
        for term, weight in pseudo_tf.items():
            postings.setdefault(term, {})[doc] = weight * (K1 + 1) / (weight + K1)

    def search(self, query: str, limit: int = 10, allowed: Callable[[ToolEntry], bool] | None = None) -> list[Hit]:
        """The best `limit` entries for `query` that `allowed` accepts, highest score first."""
        pending = self.dense.query(parts := clauses(query)) if self.dense is not None and self.dense.ready else None
        exact = self.lookup(query.strip())
        if pending is None:
            scores = self._scores(self._query_terms(query), allowed)
            if exact is not None:
                doc = self._ids[exact.name]
                scores[doc] = scores.get(doc, 0.0) + EXACT_NAME_BONUS
            return self._top(scores, limit, allowed)
        # The words are scored while the query pool embeds the parts.
        texts = [query, *parts] if len(parts) > 1 else [query]
        fused = self._fuse(self._lexical(texts), pending.result())
        score = fused[0]
        if len(texts) > 1:
            best = fused[1:].max(axis=0)
            score += PART_WEIGHT * np.where(np.isfinite(best), best, 0.0)
        if exact is not None:
            score[self._ids[exact.name]] += EXACT_NAME_BONUS
        if allowed is not None:
            score[~self._mask(allowed)] = -np.inf
        return self._best(score, limit)

    def _lexical(self, texts: list[str]) -> npt.NDArray[np.float64]:
        """Each text's BM25F score for every document (a row per text, a column per document id), every
        posting read: each term's scores are laid out once and every text's row is the sum of those of its
        terms. So a request's sentences cost little more than the request (scoring each again in Python
        cost about half of a long request's search beside the model)."""
        per_text = [self._known_terms(text) for text in texts]
        idfs = {term: idf for known in per_text for idf, term in known}
        column = {term: i for i, term in enumerate(idfs)}
        table = np.zeros((len(idfs), self._next))
        for term, idf in idfs.items():
            docs, weights = self._posting_arrays(term)
            table[column[term], docs] = idf * weights
        return np.stack([table[[column[term] for _, term in known]].sum(axis=0) for known in per_text])

    def _posting_arrays(self, term: str) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        """A term's postings as arrays (document ids, weights), kept until the catalog changes."""
        if self._arrays_version != self.version:
            self._arrays, self._arrays_version = {}, self.version
        found = self._arrays.get(term)
        if found is None:
            weights = self._postings[term]
            found = self._arrays[term] = (
                np.fromiter(weights.keys(), np.int64, len(weights)),
                np.fromiter(weights.values(), np.float64, len(weights)),
            )
        return found

    def _fuse(self, lexical: npt.NDArray[np.float64], dense: DenseScores) -> npt.NDArray[np.float64]:
        """Every document's fused score for each text (a row per text, a column per document id): min-max
        normalised dense and lexical scores, weighted and added; -inf for free ids and for tools too unlike
        a text that matched no word. Whole-array arithmetic, every text at once: 10,000 tools cost what a
        few hundred did in a Python loop."""
        values = dense.values.T  # a row per text, a column per tool row of the dense matrix
        low, high = values.min(axis=1, keepdims=True), values.max(axis=1, keepdims=True)
        normal = DENSE_WEIGHT * (values - low) / np.where(high > low, high - low, 1.0)
        best = lexical.max(axis=1, keepdims=True)
        unmatched = best == 0.0
        normal[unmatched & (values < DENSE_FLOOR)] = -np.inf
        rows = self._row_docs(dense)
        known = rows >= 0
        fused = np.full(lexical.shape, -np.inf)
        fused[:, rows[known]] = normal[:, known]
        matched = lexical > 0.0
        words = lexical * (LEXICAL_WEIGHT / np.where(unmatched, 1.0, best))
        return np.where(matched, np.where(np.isfinite(fused), fused, 0.0) + words, fused)

    def _row_docs(self, dense: DenseScores) -> npt.NDArray[np.int64]:
        """The document id of each row of the dense matrix (-1: no longer indexed), kept until either
        side changes."""
        cached = self._rows_cache
        if cached is None or cached[0] is not dense.names or cached[1] != self.version:
            ids = self._ids
            rows = np.fromiter((ids.get(name, -1) for name in dense.names), np.int64, len(dense.names))
            cached = self._rows_cache = (dense.names, self.version, rows)
        return cached[2]

    def _mask(self, allowed: Callable[[ToolEntry], bool]) -> npt.NDArray[np.bool_]:
        """Which document ids `allowed` accepts. Kept per filter object until the catalog changes: the
        discovery surface keeps one filter per set of scopes, so a narrowly scoped token asks about
        each tool once per catalog version rather than on every search."""
        cached = self._masks.get(allowed)
        if cached is None or cached[0] != self.version:
            mask = np.zeros(self._next, dtype=bool)
            for doc, record in self._docs.items():
                mask[doc] = allowed(record.entry)
            cached = self._masks[allowed] = (self.version, mask)
        return cached[1]

    def _best(self, fused: npt.NDArray[np.float64], limit: int) -> list[Hit]:
        """The `limit` best finite scores of `fused`, ties broken by name."""
        wanted = min(limit * 4 + 16, len(fused))
        if wanted <= 0 or limit <= 0:
            return []
        picked = np.argpartition(-fused, wanted - 1)[:wanted] if wanted < len(fused) else np.arange(len(fused))
        docs = self._docs
        ranked = sorted(
            ((-float(fused[doc]), docs[doc].entry) for doc in picked.tolist() if np.isfinite(fused[doc])),
            key=lambda x: (x[0], x[1].name),
        )
        return [Hit(entry, round(-negative, 4)) for negative, entry in ranked[:limit]]

    def _query_terms(self, query: str) -> list[tuple[float, dict[int, float]]]:
        """(idf, postings) of the query's known terms, rarest first, at most MAX_TERMS of them."""
        return [(idf, self._postings[term]) for idf, term in self._known_terms(query)]

    def _known_terms(self, query: str) -> list[tuple[float, str]]:
        """(idf, term) of the query's terms that some document has, rarest first, at most MAX_TERMS."""
        n = len(self._docs)
        found = []
        # Sorted by term as well: a set's order varies between processes, and so would the float sums.
        for term in sorted(set(analyze(query))):
            weights = self._postings.get(term)
            if weights:
                found.append((math.log(1 + (n - len(weights) + 0.5) / (len(weights) + 0.5)), term))
        found.sort(key=itemgetter(0), reverse=True)  # stable: equal idfs keep the term order
        return found[:MAX_TERMS]

    def _scores(
        self, terms: list[tuple[float, dict[int, float]]], allowed: Callable[[ToolEntry], bool] | None
    ) -> dict[int, float]:
        """Each matching document's score (see the module docstring for when common terms stop early)."""
        scores: dict[int, float] = {}
        read = 0
        for position, (idf, weights) in enumerate(terms):
            if read and read + len(weights) > FULL_POSTINGS:
                return self._continue(scores, terms[position:], allowed)
            read += len(weights)
            get = scores.get
            for doc, weight in weights.items():
                scores[doc] = get(doc, 0.0) + idf * weight
        return scores

    def _continue(
        self,
        scores: dict[int, float],
        terms: list[tuple[float, dict[int, float]]],
        allowed: Callable[[ToolEntry], bool] | None,
    ) -> dict[int, float]:
        """Add the remaining terms to the KEEP best documents the caller may see, and to no other."""
        if allowed is not None and len(scores) > KEEP:
            docs = self._docs
            scores = {doc: score for doc, score in scores.items() if allowed(docs[doc].entry)}
        if len(scores) > KEEP:
            cut = sorted(scores.values(), reverse=True)[KEEP - 1]  # C sort beats heapq's Python loop here
            scores = {doc: score for doc, score in scores.items() if score >= cut}
        for idf, weights in terms:
            get = weights.get
            for doc in scores:
                weight = get(doc)
                if weight is not None:
                    scores[doc] += idf * weight
        return scores

    def _top(self, scores: dict[int, float], limit: int, allowed: Callable[[ToolEntry], bool] | None) -> list[Hit]:
        # Most callers may see most tools: rank a few more than asked and filter those; only when the
        # filter rejected too many, filter every scored document first.
        wanted = limit * 4 + 16
        candidates = heapq.nlargest(wanted, scores.items(), key=itemgetter(1))
        hits = self._accept(candidates, limit, allowed)
        if allowed is not None and len(hits) < limit and len(candidates) < len(scores):
            docs = self._docs
            visible = [(doc, score) for doc, score in scores.items() if allowed(docs[doc].entry)]
            hits = self._accept(heapq.nlargest(wanted, visible, key=itemgetter(1)), limit, None)
        return hits

    def _accept(
        self, candidates: list[tuple[int, float]], limit: int, allowed: Callable[[ToolEntry], bool] | None
    ) -> list[Hit]:
        hits: list[Hit] = []
        # Ties are broken by name so the same query always answers the same way.
        ranked = sorted(((-score, self._docs[doc].entry) for doc, score in candidates), key=lambda x: (x[0], x[1].name))
        for negative, entry in ranked:
            if allowed is not None and not allowed(entry):
                continue
            hits.append(Hit(entry, round(-negative, 4)))
            if len(hits) == limit:
                break
        return hits
