"""A document cut into passages for embedding: runs of about ``words`` words that end where a line ends when
one is near, each embedded with the document's title and the heading it stands under, so a passage deep in
a manual still says what it is about ("subprocess — Popen Constructor: … args should be a sequence …").

A passage is kept as the span of the content it covers ([start, stop) in characters), so a hit shows the
passage that matched from the text the index stores anyway; only what is embedded carries the title and
heading."""

from __future__ import annotations

import functools
import re

#: A passage of ``words`` words ends instead at the last line end past this share of its length (a paragraph is
#: not cut in two for its last few words), if there is one.
_LINE_END_SHARE = 0.6
MAX_HEADINGS = 1000  # headlines looked for in a document's text (each is one scan of it)


def spans(content: str, words: int, most: int) -> list[tuple[int, int]]:
    """[start, stop) of each passage of ``content``, at most ``most``: up to ``words`` words, cut after the last
    line end past _LINE_END_SHARE of them (the regex takes each run in C: a Python loop per word cost the
    embedding stage a fifth of its time)."""
    run = _runs(words)
    found: list[tuple[int, int]] = []
    at = 0
    while len(found) < most:
        match = run.search(content, at)
        if match is None:
            break
        start, stop = match.span()
        line_end = content.rfind("\n", start + int((stop - start) * _LINE_END_SHARE), stop)
        if line_end > start and stop < len(content) and not content.startswith("\n", stop):
            stop = len(content[start:line_end].rstrip()) + start
        found.append((start, stop))
        at = stop
    return found


@functools.cache
def _runs(words: int) -> re.Pattern:
    return re.compile(rf"\S+(?:\s+\S+){{0,{words - 1}}}")


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
