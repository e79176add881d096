"""What a tool is to the search index: its fields, each weighted and length-normalised (BM25F), and the terms it
counts in each."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from jarvis.aggregator.discovery.entry import ToolEntry, schema_terms
from jarvis.aggregator.discovery.text import analyze

# A catalog entry's description past this is not indexed: no tool needs a book to say what it does,
# and a megabyte of it would cost seconds of every refresh.
MAX_INDEXED_CHARS = 20_000


@dataclass(frozen=True)
class Field:
    weight: float
    # How much a long field is discounted (BM25's b): names are short and uniform, prose is not.
    length_norm: float


# Weights measured on MetaTool and LiveMCPBench (bench/discovery_quality.py); the ranking is flat
# around these values, so they are round numbers rather than fitted ones. The description's length_norm
# was re-tuned for the hybrid (docs/decisions/0013-discovery-lexical-index-and-catalog.md): 0.75 to 0.35 took recall@5
# on all 10,339 MetaTool dev queries from 0.7967 to 0.8000 (52 queries up, 18 down) and on the 94
# LiveMCPBench task questions from 0.4478 to 0.4496 (1 up, 1 down); 0.3-0.45 all score above 0.75 on
# both; no K1 (0.9-2.0) or name weight (2-4) / length_norm (0.3-0.75) beat these by more than 0.001. The
# lexical-only fallback (no vectors yet, or no model) moves too: MetaTool 0.630 to 0.637, LiveMCPBench
# 0.382 to 0.360.
FIELDS: dict[str, Field] = {
    "name": Field(3.0, 0.5),
    "keywords": Field(1.0, 0.5),
    "description": Field(1.0, 0.35),
    "params": Field(1.0, 0.5),
    "enums": Field(0.5, 0.5),
    "context": Field(0.4, 0.5),
}


def field_counts(entry: ToolEntry, shared: dict[str, Counter[str]]) -> list[Counter[str]]:
    """Term counts per field. `shared` caches the fields that every tool of one owner repeats."""
    params, enums = schema_terms(entry.input_schema)
    keywords = " ".join((*entry.keywords, entry.category))
    context = f"{entry.source} {entry.context}"
    own = (
        entry.name,  # a downstream tool's is `<server>__<tool>`: both say what it is
        entry.description[:MAX_INDEXED_CHARS],
        " ".join(params),
        " ".join(enums),
    )
    for text in (keywords, context):
        if text not in shared:
            shared[text] = Counter(analyze(text))
    name, description, param_names, enum_values = (Counter(analyze(text)) for text in own)
    return [name, shared[keywords], description, param_names, enum_values, shared[context]]


@dataclass
class IndexedDoc:
    entry: ToolEntry
    fields: list[Counter[str]]
    lengths: list[int]
