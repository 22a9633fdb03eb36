"""Markdown rendered to text, and plain text titled by an underlined first line, on files Debian packages
ship: Node.js's API documentation (nodejs-doc, gzip-compressed Markdown), readxl's NEWS.md
(r-cran-readxl) and Python's reStructuredText sources (python3.X-doc)."""

from __future__ import annotations

from beamtrawl.transforms.preparators.text import heading_title

from tests.package_files import PY_DOC, PYTHON, debian_file
from tests.preparing import prepare_bytes

prepare = prepare_bytes


def test_markdown_is_rendered_with_its_first_heading_as_title():
    data = debian_file("nodejs-doc", "usr/share/doc/nodejs/api/child_process.md.gz").read_bytes()
    prepared, errors, _ = prepare(data, "file:///api/child_process.md.gz")
    assert errors == [] and prepared.fields["inner_mimetype"] == "text/markdown"
    assert prepared.title == "Child process"
    assert prepared.headlines[:3] == ["Child process", "Asynchronous process creation",
                                      "Spawning .bat and .cmd files on Windows"]
    content = prepared.content
    assert "The node:child_process module provides the ability to spawn subprocesses" in content  # no backticks
    assert "const ls = spawn('ls', ['-lh', '/usr']);" in content  # code blocks keep their text
    assert "# Child process" not in content and "<!--" not in content and "```" not in content
    assert "[`child_process.spawn()`][]" not in content and "child_process.spawn() function" in content


def test_markdown_tables_are_rows_of_words():
    data = debian_file("nodejs-doc", "usr/share/doc/nodejs/api/buffer.md.gz").read_bytes()
    prepared, errors, _ = prepare(data, "file:///api/buffer.md.gz")
    assert errors == [] and prepared.title == "Buffer"
    assert "| --- |" not in prepared.content and "|---" not in prepared.content


def test_news_md_headings_are_headlines():
    data = debian_file("r-cran-readxl", "usr/lib/R/site-library/readxl/NEWS.md").read_bytes()
    prepared, errors, mimetype = prepare(data, "file:///readxl/NEWS.md")
    assert (errors, mimetype) == ([], "text/markdown")
    assert prepared.title.startswith("readxl ") and prepared.headlines[0] == prepared.title
    assert "This release contains no user-facing changes." in prepared.content.split("\n")


def test_plain_text_with_an_underlined_first_line_is_titled_by_it():
    """Python's documentation sources (python3.X-doc): an underlined title, and one over- and underlined
    after a label."""
    sources = debian_file(PY_DOC, f"usr/share/doc/{PYTHON}/html/_sources")
    prepared, errors, _ = prepare((sources / "library/subprocess.rst.txt").read_bytes(), "file:///s/subprocess.rst.txt")
    assert errors == [] and prepared.title == ":mod:`subprocess` --- Subprocess management"
    prepared, errors, _ = prepare((sources / "tutorial/index.rst.txt").read_bytes(), "file:///s/index.rst.txt")
    assert errors == [] and prepared.title == "The Python Tutorial"
    assert heading_title("plain notes: the gannet plunges.\n") == ""  # one line: no title
    assert heading_title("a line\nand another\n") == ""
