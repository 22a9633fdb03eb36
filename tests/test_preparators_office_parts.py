"""Office Open XML completeness on Apache Tika's own test documents (Maven Central, tests/package_files.py):
the parts beside a Word document's body, comments on slides, and the templates and macro-enabled variants,
each typed by its [Content_Types].xml and read."""

from __future__ import annotations

import pytest
from beamtrawl.transforms.preparators import BUILTIN, Chain
from beamtrawl.transforms.preparators.mime import MimeSniffer

from tests.package_files import tika_test_document

SNIFF = MimeSniffer()


def prepare(name: str):
    data = tika_test_document("microsoft", name)
    url = f"file:///office/{name}"
    mimetype = SNIFF(data, url)
    prepared, errors = Chain(BUILTIN, SNIFF).run(data, url, mimetype)
    return prepared, errors, mimetype


def test_word_headers_footers_and_footnotes_are_text():
    prepared, errors, _ = prepare("testWORD_various.docx")
    assert errors == [] and prepared.partial == ""
    lines = prepared.content.split("\n")
    assert lines[0] == "This is the header text."  # before the body, as Tika puts it
    assert "This is the footer text." in lines and "This is a footnote." in lines
    assert "Here is a text box" in lines and "Row 1 Col 1 Row 1 Col 2 Row 1 Col 3" in lines


@pytest.mark.parametrize("name, said", [
    ("testComment.docx", "Here is a comment"),
    ("footnotes.docx", "snoska"),  # the footnote's text
    ("testComment.pptx", "Here is a comment"),
    ("testPPT_comment.pptx", "I'm afraid I'm going to have to ask you to add some content to this tps deck"),
])
def test_comments_and_notes_are_text(name, said):
    prepared, errors, _ = prepare(name)
    assert errors == [] and said in prepared.content.split("\n")


@pytest.mark.parametrize("name, mimetype, said", [
    ("testWORD_macros.docm", "application/vnd.ms-word.document.macroenabled.12", "The quick brown fox."),
    ("testWORD_template.dotx", "application/vnd.openxmlformats-officedocument.wordprocessingml.template",
     "Getting the perfect job might be challenging"),
    ("testDOTM.dotm", "application/vnd.ms-word.template.macroenabled.12", "Грегор Мендель родился в Моравии"),
    ("testEXCEL_macro.xlsm", "application/vnd.ms-excel.sheet.macroenabled.12",
     "However, a macro is about to be created"),
    ("testEXCEL_template.xltx", "application/vnd.openxmlformats-officedocument.spreadsheetml.template",
     "this is a template"),
    ("testEXCEL_macro_enabled_template.xltm", "application/vnd.ms-excel.template.macroenabled.12",
     "this is a template"),
    ("testPPT.pptm", "application/vnd.ms-powerpoint.presentation.macroenabled.12", "Attachment Test"),
    ("testPPT.potm", "application/vnd.ms-powerpoint.template.macroenabled.12", "Attachment Test"),
    ("testPPT.ppsx", "application/vnd.openxmlformats-officedocument.presentationml.slideshow", "Attachment Test"),
    ("testPPT.ppsm", "application/vnd.ms-powerpoint.slideshow.macroenabled.12", "Attachment Test"),
])
def test_templates_and_macro_variants_are_typed_and_read(name, mimetype, said):
    """libmagic calls them DOCX, XLSX or PPTX, or a ZIP (the .potm); python-docx and python-pptx refused
    them ("is not a Word file")."""
    prepared, errors, typed = prepare(name)
    assert (errors, typed) == ([], mimetype)
    assert said in prepared.content
