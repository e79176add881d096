"""Ranked search over installed servers and catalog entries (BM25 with weighted fields)."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from jarvis.registry.domain.records import Tool

DEFAULT_LIMIT = 10
_K1, _B = 1.2, 0.75
# A server's name says most about it, tool names next, prose least.
_WEIGHTS = {"name": 3, "title": 2, "tool_name": 2, "description": 1, "tool_description": 1}
_EXACT_NAME_BONUS = 1000.0
_MAX_MATCHED_TOOLS = 5  # enough to show why a server matched without bloating an agent's context
_WORD = re.compile(r"[^\W_]+")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+|[^\x00-\x7f]+")
# Words every server description uses say nothing about which server fits.
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "the",
        "of",
        "to",
        "for",
        "in",
        "on",
        "with",
        "by",
        "from",
        "or",
        "is",
        "are",
        "be",
        "it",
        "this",
        "that",
        "via",
        "mcp",
        "server",
    ]
)


def tokenize(text: str) -> list[str]:
    """Words of `text`, splitting snake_case, kebab-case and camelCase, lowered and lightly stemmed."""
    tokens = []
    for word in _WORD.findall(text):
        for part in _CAMEL.findall(word) or [word]:
            token = _stem(part.lower())
            if token and token not in _STOP:
                tokens.append(token)
    return tokens


def _stem(word: str) -> str:
    # Enough to match "files"/"file", "searching"/"search", "queries"/"query"; not a full stemmer.
    for suffix, repl in (("ies", "y"), ("sses", "ss"), ("ing", ""), ("ed", ""), ("es", "e"), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            return word[: -len(suffix)] + repl
    return word


@dataclass(frozen=True)
class Document:
    name: str
    description: str
    installed: bool
    tools: Sequence[Tool] = ()
    title: str = ""


@dataclass(frozen=True)
class Hit:
    name: str
    description: str
    installed: bool
    score: float
    matched_tools: list[str]


def _terms(doc: Document) -> Counter[str]:
    fields = [("name", doc.name), ("title", doc.title), ("description", doc.description)]
    fields += [("tool_name", t.name) for t in doc.tools] + [("tool_description", t.description) for t in doc.tools]
    counts: Counter[str] = Counter()
    for field_name, text in fields:
        for token in tokenize(text):
            counts[token] += _WEIGHTS[field_name]
    return counts


def search(query: str, documents: Iterable[Document], limit: int = DEFAULT_LIMIT) -> list[Hit]:
    """The best `limit` documents for `query`; an exact name match always ranks first."""
    docs = list(documents)
    wanted = set(tokenize(query))
    exact = query.strip().lower()
    if not docs or (not wanted and not exact):
        return []
    terms = [_terms(d) for d in docs]
    avg_length = sum(sum(t.values()) for t in terms) / len(terms) or 1.0
    frequency = Counter(token for t in terms for token in set(t) if token in wanted)
    hits = []
    for doc, counts in zip(docs, terms, strict=True):
        length = sum(counts.values())
        score = 0.0
        for token in wanted:
            tf = counts.get(token, 0)
            if tf:
                idf = math.log(1 + (len(docs) - frequency[token] + 0.5) / (frequency[token] + 0.5))
                score += idf * tf * (_K1 + 1) / (tf + _K1 * (1 - _B + _B * length / avg_length))
        if doc.name == exact:
            score += _EXACT_NAME_BONUS
        if score > 0:
            matched = _matched_tools(doc.tools, wanted)
            hits.append(Hit(doc.name, doc.description, doc.installed, round(score, 4), matched))
    hits.sort(key=lambda h: (-h.score, not h.installed, h.name))
    return hits[: limit if limit > 0 else DEFAULT_LIMIT]


def _matched_tools(tools: Sequence[Tool], wanted: set[str]) -> list[str]:
    """Tools whose name or description share words with the query, best overlap first."""
    scored = []
    for tool in tools:
        name_overlap = len(wanted & set(tokenize(tool.name)))
        text_overlap = len(wanted & set(tokenize(tool.description)))
        if name_overlap or text_overlap:
            scored.append((-(2 * name_overlap + text_overlap), tool.name))
    return [name for _, name in sorted(scored)][:_MAX_MATCHED_TOOLS]
