"""How tool metadata and queries become index terms: split identifiers, drop filler words, stem."""

from __future__ import annotations

import re

import snowballstemmer

_WORD = re.compile(r"[^\W_]+")
# Parts of an ASCII identifier: "HTTPServer" -> HTTP, Server; "readFile2" -> read, File, 2.
_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
# Scripts written without spaces: a run of them is indexed as overlapping character pairs, the usual
# way to search Chinese, Japanese and Korean text without a dictionary.
_UNSPACED_CHARS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
_UNSPACED = re.compile(f"[{_UNSPACED_CHARS}]")
_RUNS = re.compile(f"[{_UNSPACED_CHARS}]+|[^{_UNSPACED_CHARS}]+")
# Words that say nothing about which tool fits: English function words, and the filler of requests
# ("can you help me find a tool to ..."). Measured on MetaTool: removing them is worth ~7 points of recall@5.
_FILLER = """a an and are as at be by can could do does for from get has have how i in into is it its me my of on or
please should so that the their them then there these this those to use using want was we what when where
which who will with would you your tool tools help need let like some any also"""
STOPWORDS = frozenset(_FILLER.split())
_STEMMER = snowballstemmer.stemmer("english")
# word -> stem. A catalog's vocabulary is small (tens of thousands of words), so every word is
# stemmed once; the bound only protects against a flood of distinct query words.
_STEMS: dict[str, str] = {}
_MAX_STEMS = 200_000


def words(text: str) -> list[str]:
    """Lower-cased words of `text` with identifiers split (snake_case, kebab-case, camelCase)."""
    out: list[str] = []
    for word in _WORD.findall(text):
        if word.isascii():
            if word.isalpha() and word.islower():
                out.append(word)  # most words of prose: no identifier to split
            else:
                out.extend(part.lower() for part in _PART.findall(word))
        elif _UNSPACED.search(word):
            for run in _RUNS.findall(word):
                if _UNSPACED.match(run):
                    out.extend(run[i : i + 2] for i in range(max(1, len(run) - 1)))
                else:
                    out.extend(words(run))
        else:
            out.append(word.lower())  # accented and other cased scripts: no camelCase rules apply
    return out


def analyze(text: str) -> list[str]:
    """Index terms of `text`: its words without stopwords, stemmed (Porter2), in order."""
    stems = _STEMS
    out: list[str] = []
    for word in words(text):
        if word in STOPWORDS:
            continue
        stem = stems.get(word)
        if stem is None:
            stem = str(_STEMMER.stemWord(word))
            if len(stems) < _MAX_STEMS:
                stems[word] = stem
        out.append(stem)
    return out


def normalize_name(name: str) -> str:
    """A tool name as people type it: case and separators ignored ("Jarvis-Server" == "jarvis_server")."""
    return "_".join(words(name))


# Where a request moves on to its next step: the end of a sentence. A request for several things ("Find the
# route. Then list the charging stations on it.") is scored sentence by sentence as well as whole (index.py).
# Also splitting at ";", "then" and "and" scored no better (docs/decisions/0014-discovery-hybrid-retrieval.md).
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
# A sentence with fewer index terms than this ("Thanks a lot.") joins the one before it: alone it says too
# little to rank tools by.
MIN_CLAUSE_TERMS = 3
# A bound on the work of one query (each part is embedded and scored): the rest joins the last part.
MAX_CLAUSES = 8


def clauses(query: str) -> list[str]:
    """The sentences of a request that says several things; one part when it says one."""
    merged: list[str] = []
    sizes: list[int] = []
    for part in _SENTENCE_END.split(query.strip()):
        size = len(analyze(part))
        if merged and (size < MIN_CLAUSE_TERMS or sizes[-1] < MIN_CLAUSE_TERMS or len(merged) == MAX_CLAUSES):
            merged[-1] += " " + part
            sizes[-1] += size
        else:
            merged.append(part)
            sizes.append(size)
    return merged
