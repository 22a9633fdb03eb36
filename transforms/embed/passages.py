"""A document cut into passages for embedding: runs of about ``words`` words that end where a line ends when
one is near, each embedded with the document's title and the heading it stands under, so a passage deep in
a manual still says what it is about ("subprocess — Popen Constructor: … args should be a sequence …").

A passage is kept as the span of the content it covers ([start, stop) in characters), so a hit shows the
passage that matched from the text the index stores anyway; only what is embedded carries the title and
heading."""

from __future__ import annotations

import re

_WORD = re.compile(r"\S+")
#: A passage ends at the end of a line once it has this share of its words (a paragraph is not cut in two
#: for the last few words), else at a word.
_LINE_END_SHARE = 0.6
MAX_HEADINGS = 1000  # headlines looked for in a document's text (each is one scan of it)


def spans(content: str, words: int, most: int) -> list[tuple[int, int]]:
    """[start, stop) of each passage of ``content``, at most ``most``."""
    found: list[tuple[int, int]] = []
    start = stop = None
    count = 0
    for match in _WORD.finditer(content):
        if start is None:
            start, count = match.start(), 0
        stop, count = match.end(), count + 1
        line_ends = content.startswith("\n", stop) or content.startswith("\r", stop)
        if count >= words or (line_ends and count >= words * _LINE_END_SHARE):
            found.append((start, stop))
            start = None
            if len(found) >= most:
                return found
    if start is not None:
        found.append((start, stop))
    return found


def passages(title: str, headlines: str, content: str, words: int, most: int) -> tuple[list[tuple[int, int]], list[str]]:
    """(spans, the text embedded for each): a document without text is one empty span embedded by its title
    alone; one without either has none."""
    cut = spans(content, words, most)
    if not cut:
        return ([(0, 0)], [title]) if title.strip() else ([], [])
    return cut, headed(title, headlines, content, cut)


def headed(title: str, headlines: str, content: str, cut: list[tuple[int, int]]) -> list[str]:
    """The text embedded for each span: ``title — heading: passage``, the heading being the last headline that
    starts a line of the content before the passage ends (none above: the title alone)."""
    marks = _heading_marks(headlines, content[:cut[-1][1]] if cut else "")
    texts, n, heading = [], 0, ""
    for start, stop in cut:
        while n < len(marks) and marks[n][0] < stop:
            heading = marks[n][1]
            n += 1
        label = " — ".join(part for part in (title, heading if heading != title else "") if part)
        texts.append(f"{label}: {content[start:stop]}" if label else content[start:stop])
    return texts


def _heading_marks(headlines: str, content: str) -> list[tuple[int, str]]:
    """(offset in the content, headline) of each headline found at the start of a line, in the content's order."""
    marks = []
    for line in list(dict.fromkeys(h.strip() for h in headlines.splitlines()))[:MAX_HEADINGS]:
        found = re.search(r"(?m)^[ \t]*" + re.escape(line), content) if line else None
        if found:
            marks.append((found.start(), line))
    return sorted(marks)
