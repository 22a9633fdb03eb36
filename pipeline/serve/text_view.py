"""A hit's "text" view: what the index holds of a document (title, fields, text), with the words of the
search marked, for every source — a web page, an archive member or a mail read as it was indexed, where
opening the original would download it or leave the site.

The view is the index's own text, escaped: nothing of the document runs on the page. Long texts are shown
up to MAX_CHARACTERS, with a line that says how much more there is.
"""

from __future__ import annotations

import html
import re

from beamtrawl.transforms.index.query import QueryError, parse_query, words

#: Characters of a document's text one view shows (a long book would otherwise make a page of megabytes).
MAX_CHARACTERS = 500_000
_WORD = re.compile(r"[^\W_]+")


def query_words(q: str, fields=()) -> tuple[frozenset[str], tuple[str, ...]]:
    """(whole words, prefixes) of the search ``q`` that the view marks; nothing for a query that does not parse."""
    try:
        query = parse_query(q, fields) if q.strip() else None
    except QueryError:
        query = None
    if query is None:
        return frozenset(), ()
    whole, prefixes = set(), []
    for clause in query.clauses:
        for term in clause:
            found = term.words
            if term.prefix and found:
                prefixes.append(found[-1])
                found = found[:-1]
            whole.update(found)
    return frozenset(whole), tuple(prefixes)


def marked(text: str, whole: frozenset[str], prefixes: tuple[str, ...]) -> str:
    """``text`` HTML-escaped, each word the search looked for in <mark> (compared as the index compares
    words: lower case, accents removed; a word equal to a searched one up to an English suffix counts)."""
    out, last = [], 0
    for match in _WORD.finditer(text):
        folded = "".join(words(match.group()))
        if _wanted(folded, whole, prefixes):
            out.append(html.escape(text[last:match.start()]))
            out.append(f"<mark>{html.escape(match.group())}</mark>")
            last = match.end()
    out.append(html.escape(text[last:]))
    return "".join(out)


def _wanted(word: str, whole: frozenset[str], prefixes: tuple[str, ...]) -> bool:
    if word in whole or any(word.startswith(p) for p in prefixes):
        return True
    return any(_stem(word) == _stem(w) for w in whole)


def _stem(word: str) -> str:
    """A light English stem (runs, running, run), enough to mark what the Porter-stemmed index matched."""
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiou":  # runn → run
        word = word[:-1]
    return word


def shown_text(text: str) -> tuple[str, int]:
    """(the part of ``text`` the view shows, how many characters it leaves out)."""
    return text[:MAX_CHARACTERS], max(0, len(text) - MAX_CHARACTERS)
