"""Compressed single files, man pages and the MIME decision, on files Debian packages ship (fetched once
and cached, see ``package_files``) and on hostile counterparts made from them with the real compressors:
a gzip bomb, a cut stream, a PDF in a .gz, a .gz in a .gz, odd names."""

from __future__ import annotations

import bz2
import gzip
import io
import re
import shutil
import subprocess
import tarfile
import time
import zipfile

import magic
import pytest
from beamtrawl.transforms.preparators import BUILTIN, compressed
from beamtrawl.transforms.preparators.archive import DEFAULTS
from beamtrawl.transforms.preparators.html import prepare_html
from beamtrawl.transforms.preparators.mime import mail_type

from tests.package_files import PY_DOC, PY_LIB, PY_TESTSUITE, debian_deb, debian_file, tika_test_document
from tests.preparing import SNIFF, prepare_bytes
from tests.real_corpus import corpus

MiB = 1024 * 1024
LS_MAN = ("coreutils", "usr/share/man/man1/ls.1.gz")
CHANGELOG = ("coreutils", "usr/share/doc/coreutils/changelog.Debian.gz")
def _mandoc(test):
    """Man pages are rendered by mandoc, which tests/run.sh installs: without it these tests fail, never skip."""
    assert shutil.which("mandoc"), "mandoc is missing: tests/run.sh installs it"
    return test


needs_mandoc = _mandoc


def real(package_path) -> bytes:
    return debian_file(*package_path).read_bytes()


prepare = prepare_bytes


# -- man pages and changelogs as Debian ships them -----------------------------------------------------------

@needs_mandoc
def test_man_page_header_and_footer_are_its_metadata():
    """The volume, the source's release and the date mandoc prints on every page (Tika reads them in the
    source's ``.TH``): a search for "coreutils 9.1" finds the pages of that release."""
    prepared, errors, _ = prepare(real(LS_MAN), "file:///usr/share/man/man1/ls.1.gz")
    assert errors == [] and prepared.metadata == "User Commands  GNU coreutils 9.1  September 2022"
    assert "LS(1)" not in prepared.metadata and "coreutils 9.1" not in prepared.content


@needs_mandoc
@pytest.mark.parametrize("package_path, title, heading, phrase", [
    (LS_MAN, "ls - list directory contents", "DESCRIPTION", "do not ignore entries starting with ."),
    (("bash", "usr/share/man/man1/bash.1.gz"), "bash - GNU Bourne-Again SHell", "SHELL GRAMMAR",
     "Bash is an sh-compatible command language interpreter"),
])
def test_man_page_is_readable_text_with_title_and_headings(package_path, title, heading, phrase):
    prepared, errors, mimetype = prepare(real(package_path), "file:///usr/share/man/man1/" +
                                         package_path[1].rsplit("/", 1)[1])
    assert errors == [] and mimetype == "application/gzip"
    assert prepared.title == title and heading in prepared.headlines and prepared.headlines[0] == "NAME"
    assert phrase in " ".join(prepared.content.split())
    assert not re.search(r"^\.(TH|SH|B|I)\b|\\f[BIR]|\x08", prepared.content, re.MULTILINE)  # no roff, no overstrikes
    assert prepared.fields == {"inner_mimetype": "text/troff", "compression": "gzip"}


def test_debian_changelog_is_text_of_the_document():
    prepared, errors, _ = prepare(real(CHANGELOG), "file:///usr/share/doc/coreutils/changelog.Debian.gz")
    assert errors == [] and prepared.content.startswith("coreutils (") and "urgency=" in prepared.content
    assert prepared.fields["inner_mimetype"] == "text/plain" and not prepared.partial


@needs_mandoc
@pytest.mark.parametrize("tool, suffix, mimetype", [
    ("gzip", ".gz", "application/gzip"), ("bzip2", ".bz2", "application/x-bzip2"),
    ("xz", ".xz", "application/x-xz"), ("zstd", ".zst", "application/zstd")])
def test_every_codec_made_by_its_own_tool(tool, suffix, mimetype):
    page = gzip.decompress(real(LS_MAN))
    packed = subprocess.run([tool, "-c"], input=page, capture_output=True, check=True).stdout
    prepared, errors, sniffed = prepare(packed, f"file:///m/ls.1{suffix}")
    assert (errors, sniffed) == ([], mimetype)
    assert prepared.title == "ls - list directory contents" and prepared.fields["compression"] == tool


@pytest.mark.parametrize("suffix, mimetype", [
    (".tar.gz", "application/x-compressed-tar"), (".tgz", "application/x-compressed-tar"),
    (".tar.bz2", "application/x-bzip-compressed-tar"), (".tar.xz", "application/x-xz-compressed-tar"),
    (".tar.zst", "application/x-zstd-compressed-tar")])
def test_compressed_tarballs_by_name_plus_magic(tmp_path, suffix, mimetype):
    """Made by GNU tar (-a: the compressor by the suffix) from a package's documentation folder."""
    docs = debian_file(*CHANGELOG).parent
    archive = tmp_path / f"coreutils-doc{suffix}"
    subprocess.run(["tar", "-C", str(docs.parent), "-caf", str(archive), docs.name], check=True)
    prepared, errors, sniffed = prepare(archive.read_bytes(), f"file:///a/{archive.name}")
    assert (errors, sniffed) == ([], mimetype)
    assert "coreutils/copyright" in prepared.content and "Free Software Foundation" in prepared.content
    assert "coreutils (" in prepared.content  # the changelog.Debian.gz inside, decompressed in turn
    assert SNIFF(archive.read_bytes(), "file:///a/coreutils-doc.gz") in compressed.MIME_TYPES  # magic alone


def test_data_tar_xz_of_a_debian_package():
    """A .deb's data.tar.xz, as Debian's tools made it."""
    deb = debian_deb("coreutils")
    data = subprocess.run(["ar", "p", str(deb), "data.tar.xz"], capture_output=True, check=True).stdout
    prepared, errors, mimetype = prepare(data, "file:///deb/data.tar.xz")
    assert (errors, mimetype) == ([], "application/x-xz-compressed-tar")
    names = prepared.content.split("\n")
    assert "./bin/ls" in names and "./usr/share/man/man1/ls.1.gz" in names
    assert "GNU Free Documentation License" in prepared.content  # read within max_bytes, after the binaries


# -- hostile compressed files ---------------------------------------------------------------------------------

def test_gzip_bomb_stops_at_the_ratio_bound():
    bomb = gzip.compress(bytes(50 * MiB), compresslevel=9)  # ~50 KB, a ratio of ~1000:1
    prepared, errors, _ = prepare(bomb, "file:///x/bomb.gz")
    limit = dict(DEFAULTS)["max_ratio"] * len(bomb)
    assert errors == [] and prepared.content == ""
    assert prepared.partial == (f"decompressed only {limit} bytes: reached max_ratio (100:1); "
                                "the application/octet-stream inside was not prepared")


def test_size_bound_holds_below_the_ratio():
    text = b"".join(b"line %d of a long log\n" % i for i in range(1_000_000))  # ~25 MB, ratio ~10:1
    prepared, errors, _ = prepare(gzip.compress(text), "file:///x/app.log.gz")
    assert errors == [] and prepared.content.startswith("line 0 of a long log")
    assert f"reached max_bytes ({10 * MiB})" in prepared.partial  # the text up to the bound is kept


def test_truncated_gz_keeps_what_was_readable():
    whole = real(CHANGELOG)
    prepared, errors, _ = prepare(whole[: len(whole) // 2], "file:///x/changelog.Debian.gz")
    full = gzip.decompress(whole).decode()
    assert errors == [] and prepared.content and full.startswith(prepared.content[:1000])
    assert len(prepared.content) < len(full) and "the gzip stream is damaged after" in prepared.partial


@needs_mandoc
def test_truncated_zstd_is_reported():
    """zstd gives a block's bytes only once the block is whole: a cut in the first block leaves nothing."""
    page = gzip.decompress(real(("bash", "usr/share/man/man1/bash.1.gz")))  # ~360 KB: three 128 KiB blocks
    packed = subprocess.run(["zstd", "-c"], input=page, capture_output=True, check=True).stdout
    prepared, errors, _ = prepare(packed[: len(packed) * 3 // 4], "file:///x/bash.1.zst")
    assert errors == [] and "the zstd stream ends early" in prepared.partial
    assert prepared.content.startswith("NAME"), prepared.content[:200]  # rendered by mandoc (tests/run.sh)
    prepared, errors, _ = prepare(packed[:1000], "file:///x/bash.1.zst")
    assert prepared is None and errors == ["archive: not a readable zstd file: the stream ends early"]


def test_cut_tar_gz_keeps_the_entries_before_the_cut(tmp_path):
    docs = debian_file(*CHANGELOG).parent
    archive = tmp_path / "coreutils-doc.tar.gz"
    subprocess.run(["tar", "-C", str(docs.parent), "-czf", str(archive), docs.name], check=True)
    data = archive.read_bytes()
    prepared, errors, _ = prepare(data[: len(data) * 3 // 4], "file:///a/coreutils-doc.tar.gz")
    assert errors == [] and prepared.fields["truncated"] == "true"
    assert re.fullmatch(r"archive damaged after \d+ entries \(EOFError: Compressed file ended .*\)", prepared.partial)
    assert "coreutils/copyright" in prepared.content.split("\n")


def test_gz_of_a_pdf_is_read_as_the_pdf():
    pdf = debian_file("bash-doc", "usr/share/doc/bash/bash.pdf").read_bytes()
    prepared, errors, _ = prepare(gzip.compress(pdf), "file:///x/bash.pdf.gz")
    assert errors == [] and prepared.fields["inner_mimetype"] == "application/pdf"
    assert "Bourne-Again SHell" in prepared.content


def test_gz_of_a_broken_pdf_is_a_failure():
    pdf = debian_file("bash-doc", "usr/share/doc/bash/bash.pdf").read_bytes()
    prepared, errors, _ = prepare(gzip.compress(pdf[:2000]), "file:///x/bash.pdf.gz")
    assert prepared is None and len(errors) == 1
    assert errors[0].startswith("archive: the gzip-compressed application/pdf inside: pdf: ")


def test_nested_gz_gz_and_bz2_gz():
    inner = real(CHANGELOG)
    for url, data in (("file:///x/changelog.Debian.gz.gz", gzip.compress(inner)),
                      ("file:///x/changelog.Debian.gz.bz2", bz2.compress(inner))):
        prepared, errors, _ = prepare(data, url)
        assert errors == [] and prepared.content.startswith("coreutils (")
        assert prepared.fields["inner_mimetype"] == "text/plain"  # the innermost type
    deeper = gzip.compress(gzip.compress(gzip.compress(inner)))  # text at the nesting bound is still decoded
    prepared, errors, _ = prepare(deeper, "file:///x/changelog.Debian.gz.gz.gz.gz")
    assert errors == [] and prepared.content.startswith("coreutils (")
    prepared, errors, _ = prepare(gzip.compress(deeper), "file:///x/changelog.Debian.gz.gz.gz.gz.gz")
    assert errors == [] and prepared.content == ""  # past it: found by name, not a failure
    assert prepared.fields["inner_mimetype"] == "application/gzip"


def test_odd_names_inside_and_out():
    """The name stored in the gzip header is not used (it may be anything); the outer name decides."""
    text = gzip.decompress(real(CHANGELOG))
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="../../etc/passwd\n.pdf", mode="wb", fileobj=buffer) as handle:
        handle.write(text)
    for url in ("file:///x/odd%20name%E2%98%83%3F.txt.gz", "file:///x/.gz", "file:///x/no-suffix"):
        prepared, errors, mimetype = prepare(buffer.getvalue(), url)
        assert (errors, mimetype) == ([], "application/gzip") and prepared.content.startswith("coreutils (")


def test_gzip_magic_then_garbage_is_a_failure():
    prepared, errors, _ = prepare(b"\x1f\x8b" + bytes(range(256)) * 4, "file:///x/broken.gz")
    assert prepared is None and errors[0].startswith("archive: not a readable gzip file")


def test_misnamed_tar_gz_is_read_as_a_single_file():
    prepared, errors, mimetype = prepare(real(CHANGELOG), "file:///x/changelog.tar.gz")
    assert (errors, mimetype) == ([], "application/x-compressed-tar") and prepared.content.startswith("coreutils (")


# -- the MIME decision ---------------------------------------------------------------------------------------

def test_text_named_text_stays_text_whatever_magic_finds_inside():
    """libmagic calls this Dovecot wiki page a Sega Pico ROM (by what it finds at byte 256)."""
    page = debian_file("dovecot-core", "usr/share/doc/dovecot-core/wiki/MissingMailboxes.txt").read_bytes()
    assert SNIFF(page, "file:///wiki/MissingMailboxes") == "application/x-sega-pico-rom"  # the name says nothing
    assert SNIFF(page, "file:///wiki/MissingMailboxes.txt") == "text/plain"
    prepared, errors, _ = prepare(page, "file:///wiki/MissingMailboxes.txt")
    assert errors == [] and "mailbox" in prepared.content.lower()
    assert not SNIFF(bytes(range(1, 256)) * 8, "file:///x/garbage.txt").startswith("text/")  # no NUL, yet not text


@pytest.mark.parametrize("path, mimetype", [
    ("cjkencodings/cp949.txt", "text/plain"),  # libmagic: a DOS executable
    ("cjkencodings/iso2022_kr.txt", "text/plain"),  # libmagic: application/octet-stream
    ("test_email/data/msg_29.txt", "message/rfc822"),  # a mail named .txt stays a mail: magic is more precise
    ("xmltestdata/expat224_utf8_bug.xml", "text/xml"),  # no declaration
    ("xmltestdata/test.xml", "text/xml"),  # an <html> root, but named .xml
])
def test_cpython_test_data_types(path, mimetype):
    data = debian_file(PY_TESTSUITE, f"{PY_LIB}/test/{path}").read_bytes()
    assert SNIFF(data, f"file:///t/{path}") == mimetype


def _cpython_mails() -> list:
    return sorted(debian_file(PY_TESTSUITE, f"{PY_LIB}/test/test_email/data/msg_01.txt")
                  .parent.glob("msg_*.txt"))


def test_mail_named_txt_is_told_apart_without_reading_all_text_with_magic():
    """Text named as text is typed without libmagic unless it begins as magic's mail and news rules look
    (a header and its colon, "Forward to", "#! rnews", …; speed, issue 14): each of CPython's test mails,
    named .txt, is still what magic calls it when magic says mail, else text; and so is each with its first
    byte cut, a blank line or a UTF-8 byte order mark put before it (magic: often no longer mail; with the
    mark, still mail: the mark made such a mail text/plain). Where magic says text, a mail's header block
    still makes it a mail (``mail_type``, issue 24)."""
    mails = _cpython_mails()
    assert len(mails) > 40
    kinds = set()
    for path in mails:
        data = path.read_bytes()
        for variant in (data, data[1:], b"\n" + data, b"\xef\xbb\xbf" + data):
            said = magic.from_buffer(variant[:65536], mime=True)
            expected = said if said.startswith("message/") else mail_type(variant) or "text/plain"
            assert SNIFF(variant, f"file:///mail/{path.name}") == expected, (path.name, variant[:30])
            kinds.add(expected)
    assert kinds == {"message/rfc822", "application/mbox", "text/plain"}


def test_xml_recognised_by_its_root_element():
    simple = debian_file(PY_TESTSUITE, f"{PY_LIB}/test/xmltestdata/simple.xml").read_bytes()
    assert not simple.startswith(b"<?xml")
    assert SNIFF(simple, "file:///x/simple.xml") == "text/xml"
    assert SNIFF(simple.strip() + b"\n", "file:///x/simple") == "text/xml"  # closed root, no name
    prepared, errors, _ = prepare(simple, "file:///x/simple.xml")
    assert errors == [] and "<element" not in prepared.content and "text" in prepared.content
    assert SNIFF(b"<p>a <b>bold</b> note</p>", "file:///x/note.txt") == "text/plain"  # the name says text
    assert SNIFF(b"<html><body><p>hi</p></body></html>", "file:///x/page.xml") == "text/xml"  # as named


@pytest.mark.parametrize("package, path, magic_says, named", [
    ("git", "usr/share/doc/git/RelNotes/2.32.0.txt", "text/html", "text/plain"),
    ("python3-matplotlib", "usr/lib/python3/dist-packages/matplotlib/backends/backend_ps.py", "text/x-ruby",
     "text/x-python"),
])
def test_a_name_that_says_text_wins_over_magics_text_type(package, path, magic_says, named):
    """Issue 14: when the name says a text type and the bytes decode as text, it is text; the HTML reader
    would keep a fraction of it."""
    data = debian_file(package, path).read_bytes()
    assert magic.from_buffer(data[:65536], mime=True) == magic_says
    assert SNIFF(data, f"file:///{path}") == named
    prepared, errors, _ = prepare(data, f"file:///{path}")
    assert errors == [] and len(prepared.content) >= 0.9 * len(data.decode())


@pytest.mark.parametrize("member, magic_says, inner", [
    ("assert.md", "application/javascript", "text/markdown"),
    ("buffer.json", "text/html", "application/json"),
])
def test_compressed_markdown_and_json_are_read_whole(member, magic_says, inner):
    packed = debian_file("nodejs-doc", f"usr/share/doc/nodejs/api/{member}.gz").read_bytes()
    data = gzip.decompress(packed)
    assert magic.from_buffer(data[:65536], mime=True) == magic_says
    prepared, errors, _ = prepare(packed, f"file:///usr/share/doc/nodejs/api/{member}.gz")
    assert errors == [] and prepared.fields["inner_mimetype"] == inner
    share = 0.7 if inner == "text/markdown" else 0.9  # rendered Markdown drops its markup and link targets
    assert len(prepared.content) >= share * len(data.decode())
    if inner == "text/markdown":  # read to its end
        assert prepared.content.endswith("avoid a string as the second\nargument.")


@pytest.mark.parametrize("package, path, url", [
    ("shared-mime-info", "usr/share/doc/shared-mime-info/NEWS.gz", "file:///doc/NEWS.gz"),  # magic: JavaScript
    ("polkitd", "usr/share/polkit-1/rules.d/50-default.rules", "file:///rules.d/50-default.rules"),
])
def test_javascript_without_a_code_name_is_read_as_text(package, path, url):
    data = debian_file(package, path).read_bytes()
    prepared, errors, mimetype = prepare(data, url)
    inner = prepared.fields.get("inner_mimetype", mimetype)
    assert errors == [] and inner == "application/javascript"
    text = gzip.decompress(data) if path.endswith(".gz") else data
    assert len(prepared.content) >= 0.9 * len(text.decode().strip())


def test_svg_goes_to_the_xml_reader():
    data = debian_file("nodejs-doc", "usr/share/doc/nodejs/api/assets/js-flavor-esm.svg").read_bytes()
    url = "file:///assets/js-flavor-esm.svg"
    assert SNIFF(data, url) == "image/svg+xml"
    assert next(spec.name for spec in BUILTIN if spec.accepts("image/svg+xml", url)) == "xml"
    assert prepare(data, url)[1] == []


@needs_mandoc
@pytest.mark.parametrize("package, path, title", [
    ("manpages", "usr/share/man/man7/pthreads.7.gz", "pthreads - POSIX threads"),  # magic: JavaScript
    ("manpages", "usr/share/man/man7/aio.7.gz", "aio - POSIX asynchronous I/O overview"),
    ("manpages", "usr/share/man/man7/feature_test_macros.7.gz", "feature_test_macros - feature test macros"),
    ("manpages", "usr/share/man/man5/utmp.5.gz", "utmp, wtmp - login records"),  # magic: C
    ("apt", "usr/share/man/man5/apt.conf.5.gz", "apt.conf - Configuration file for APT"),
])
def test_man_pages_named_by_section_are_man_pages(package, path, title):
    prepared, errors, _ = prepare(debian_file(package, path).read_bytes(), f"file:///{path}")
    assert errors == [] and prepared.fields["inner_mimetype"] == "text/troff"
    assert prepared.title == title and "DESCRIPTION" in prepared.headlines and len(prepared.content) > 2000


def test_so_redirect_page_is_titled_by_its_name():
    path = "usr/share/man/man3/siginfo_t.3type.gz"
    prepared, errors, _ = prepare(debian_file("manpages", path).read_bytes(), f"file:///{path}")
    assert errors == [] and prepared.fields["inner_mimetype"] == "text/troff"
    assert prepared.title == "siginfo_t(3type)" and prepared.content == "see man7/system_data_types.7"


def test_gnu_info_manual_is_read_node_by_node():
    """makeinfo's node separator (0x1F) made libmagic call an Info manual data: coreutils.info.gz gave nothing."""
    path = "usr/share/info/coreutils.info.gz"
    prepared, errors, _ = prepare(debian_file("coreutils", path).read_bytes(), f"file:///{path}")
    assert errors == [] and prepared.fields["inner_mimetype"] == "text/x-info"
    assert prepared.title == "GNU Coreutils" and "Common options" in prepared.headlines
    assert "Certain options are available in all of these programs." in " ".join(prepared.content.split())
    assert not set("\x1f\x7f\x08") & set(prepared.content)  # separators, tag table offsets, index markers


def test_split_info_manual_main_file_names_its_nodes():
    """groff.info.gz holds only the indirect and tag tables of groff.info-1 and -2: found by its nodes' names,
    not by their byte offsets."""
    data = (corpus() / "groff/usr/share/info/groff.info.gz").read_bytes()
    prepared, errors, _ = prepare(data, "file:///usr/share/info/groff.info.gz")
    assert errors == [] and "Groff Options" in prepared.headlines and "This manual documents GNU" in prepared.content
    assert "975" not in prepared.content



def test_an_info_tag_table_of_millions_of_nodes_keeps_max_nodes_names(monkeypatch):
    """A tag table's names are headlines: a hostile one of 3 million (60 MB) once made as many, unbounded."""
    from beamtrawl.transforms.preparators import info

    monkeypatch.setattr(info, "MAX_NODES", 1000)  # 50,000 as shipped: the same bound, made small here
    table = b"".join(b"Node: node %d\x7f%d\n" % (i, i) for i in range(30_000))
    data = (b"This is x.info, produced by makeinfo version 7.0 from x.texi.\n\x1f\nFile: x.info,  Node: Top\n\nhi\n"
            b"\x1f\nTag Table:\n" + table + b"\x1f\nEnd Tag Table\n")
    prepared = info.prepare_info(data, "file:///h/x.info", "text/x-info", {})
    assert len(prepared.headlines) == 999 and prepared.headlines[-1] == "node 998"  # after "Top", not a headline
    assert prepared.partial == "kept the first 1,000 node names of its tables" and "hi" in prepared.content

@pytest.mark.parametrize("path, phrase", [
    ("groff/usr/share/groff/1.22.4/tmac/s.tmac", "These ms macros require groff."),
    ("groff/usr/share/doc/groff-base/examples/hdtbl/rainbow.roff", "This file is part of groff"),
])
def test_roff_that_is_no_manual_page_is_read_as_its_source(path, phrase):
    """mandoc formats man and mdoc only: a macro package or an hdtbl document gave it (next to) nothing."""
    prepared, errors, mimetype = prepare((corpus() / path).read_bytes(), f"file:///{path}")
    assert (errors, mimetype) == ([], "text/troff") and phrase in prepared.content


@pytest.mark.parametrize("path, mimetype, phrase", [
    ("libreoffice-common/usr/lib/libreoffice/share/psprint/driver/SGENPRT.PS", "application/vnd.cups-ppd",
     '*ModelName: "Generic Printer"'),
    ("libreoffice-common/usr/lib/libreoffice/program/versionrc", "application/x-setupscript", "[Version]"),
])
def test_text_under_application_types_is_text(path, mimetype, phrase):
    """A printer description and an INI file libmagic names as applications were indexed by name only."""
    prepared, errors, typed = prepare((corpus() / path).read_bytes(), f"file:///{path}")
    assert (errors, typed) == ([], mimetype) and phrase in prepared.content


def test_html_reader_keeps_what_the_main_text_extractor_left_out():
    """Node's changelogs open with a <table>, so libmagic calls them HTML, and read as HTML they gave 195
    of 400,000 characters without a word (trafilatura took all of it for boilerplate). The same shape from
    Node's real buffer.md (nodejs-doc): a table, then 200 KB of Markdown; now read whole, the main text first."""
    markdown = gzip.decompress(debian_file("nodejs-doc", "usr/share/doc/nodejs/api/buffer.md.gz").read_bytes())
    data = b"<table>\n<tr><th>Stable</th></tr>\n<tr><td>v18</td></tr>\n</table>\n\n" + markdown
    url = "file:///usr/share/doc/nodejs/changelogs/CHANGELOG_V18.md"
    assert SNIFF(data, url) == "text/markdown"  # libmagic: a script or HTML; the name says Markdown
    as_html = prepare_html(data, url, "text/html", {})
    text = " ".join(as_html.content.split())
    assert text.startswith("| Stable |") and as_html.partial == ""
    assert "can allow this old data to be leaked when the `Buffer` memory is read." in text


def test_html_after_the_closing_html_tag_is_read():
    """groff -Thtml writes an empty page, then the page after its </html>: libxml2 dropped all of it."""
    path = "groff/usr/share/doc/groff-base/examples/webpage.html"
    prepared, errors, _ = prepare((corpus() / path).read_bytes(), f"file:///{path}")
    assert errors == [] and "HIS is the home page for groff" in " ".join(prepared.content.split())


def test_html_index_page_keeps_its_list_of_links():
    """A Sphinx toctree page is a list of links, which trafilatura judges boilerplate: Python's "Python
    Runtime Services" kept 70 % of its words; its modules' entries are its text, the sidebar is not."""
    path = "usr/share/doc/python3.11/html/library/python.html"
    prepared, errors, _ = prepare((corpus() / PY_DOC / path).read_bytes(), f"file:///{path}")
    text = " ".join(prepared.content.split())
    assert errors == [] and "sysconfig — Provide access to Python’s configuration information" in text
    assert "Report a Bug" not in text and "Show Source" not in text


def test_a_text_named_compressed_file_is_not_text():
    assert SNIFF(gzip.compress(b"plain words " * 50), "file:///x/notes.txt.gz") == "application/gzip"


def test_tar_in_a_plain_gz_is_walked():
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        info = tarfile.TarInfo("notes/razorbill.txt")
        body = b"a razorbill was seen at dawn\n"
        info.size = len(body)
        archive.addfile(info, io.BytesIO(body))
    prepared, errors, mimetype = prepare(buffer.getvalue(), "file:///x/bundle.gz")
    assert (errors, mimetype) == ([], "application/gzip") and "razorbill was seen" in prepared.content


# -- a real package's documentation, crawled ------------------------------------------------------------------

@needs_mandoc
def test_crawl_of_a_packages_documentation_and_man_pages(tmp_path, make_config, crawl, search):
    """coreutils' /usr/share as Debian ships it: 112 .gz (man pages, changelogs, NEWS), 43 gettext
    catalogues no preparator reads, 3 plain files. Nothing fails; the catalogues are unsupported, not
    failed; with the catch-all off they are skipped without a document."""
    root = debian_file(*CHANGELOG).parents[2]
    catalogues = len(list(root.glob("locale/*/LC_MESSAGES/*.mo")))
    files = sum(1 for path in root.rglob("*") if path.is_file() and not path.is_symlink())
    config = make_config(root)
    run = crawl(config)
    assert run.code == 0, run.stdout + run.stderr
    assert run.counts["failed"] == 0 and run.report["problems"] == []
    assert run.counts["unsupported"] == catalogues > 0 and run.report["documents_in_index"] == files
    assert (f"{catalogues} documents of types no preparator reads, indexed by name, size and date (not failed): "
            f"{catalogues} application/x-gettext-translation") in run.stdout  # which types, how many each
    assert run.report["unsupported_types"] == {"application/x-gettext-translation": catalogues}
    hits = search(config, '"list directory contents"')
    assert any(h["url"].endswith("/man1/ls.1.gz") and h["title"] == "ls - list directory contents" for h in hits)
    assert search(config, "urgency")  # the changelog.Debian.gz

    off = make_config(root, name="off.yaml", index={"path": str(tmp_path / "off.sqlite")},
                      preparators=[{"name": "metadata_only", "enabled": False}])
    run = crawl(off)
    assert run.code == 0 and run.counts["failed"] == 0 and run.counts["skipped_unread"] == catalogues
    assert run.report["documents_in_index"] == files - catalogues
    assert (f"{catalogues} files of types no preparator reads skipped (metadata_only is off): {catalogues} "
            f"application/x-gettext-translation") in run.stdout


@needs_mandoc
def test_man_page_cannot_include_local_files():
    """roff's ``.so`` reads a file: mandoc refuses absolute paths, and runs where relative ones find nothing."""
    page = gzip.decompress(real(LS_MAN)) + b".so /etc/passwd\n.so etc/passwd\n.so ../../../../etc/passwd\n"
    prepared, errors, _ = prepare(gzip.compress(page), "file:///m/ls.1.gz")
    assert errors == [] and prepared.title == "ls - list directory contents"
    assert "root:" not in prepared.content and "See the file /etc/passwd" in prepared.content


def test_gzip_stored_name_is_metadata():
    """The name a gzip header stores (``gzip -N`` restores it; Tika names the member by it) is metadata, not the
    inner file's name: Tika's bob.gz holds alice.txt, quine.gz inflates to itself and stores its own name."""
    for name, stored in (("bob.gz", "alice.txt"), ("quine.gz", "quine.gz")):
        prepared, _errors, _mimetype = prepare_bytes(tika_test_document("pkg", name), f"file:///t/{name}")
        assert prepared is not None and stored in prepared.metadata.splitlines(), name
    data = tika_test_document("pkg", "bob.gz")
    assert compressed.gzip_stored_name(data) == "alice.txt"
    assert compressed.gzip_stored_name(data[:13]) == ""  # cut before the name's end
    assert compressed.gzip_stored_name(data[:3] + b"\x0c" + data[4:10] + b"\xff\xff") == ""  # FEXTRA past the end
    assert compressed.gzip_stored_name(gzip.compress(b"x")) == ""  # Python writes no name


def test_a_compressed_tar_names_the_tar_inside():
    """A compressed TAR names its TAR as Tika does: by the gzip header's stored name, else as gunzip restores it
    (Tika's ``test-documents.tgz`` holds ``test-documents.tar``; ``TIKA-216.tgz`` stores no name)."""
    for name in ("test-documents.tgz", "TIKA-216.tgz"):
        prepared, _errors, _mimetype = prepare_bytes(tika_test_document("pkg", name), f"file:///t/{name}")
        assert prepared is not None and f"{name[:-4]}.tar" in prepared.metadata.splitlines(), name
    assert compressed.tar_name("file:///t/a.b.tar.gz", compressed.GZIP) == "a.b.tar"
    assert compressed.tar_name("file:///t/x.TBZ2", compressed.BZIP2) == "x.tar"
    assert compressed.tar_name("file:///t/.tgz", compressed.GZIP) == ""
    assert compressed.tar_name("file:///t/x.gz", compressed.GZIP) == ""


@pytest.mark.parametrize("name", ["iso2022_jp", "iso2022_kr"])
def test_iso_2022_text_is_read_in_its_charset(name):
    """ISO-2022 is 7-bit: Japanese text and mail in it are ASCII bytes, valid UTF-8, and were indexed as
    ``$B$N3+H/``; the escape sequences say which charset, and the text is what CPython's UTF-8 twin holds."""
    folder = f"{PY_LIB}/test/cjkencodings"
    data = debian_file(PY_TESTSUITE, f"{folder}/{name}.txt").read_bytes()
    prepared, errors, _ = prepare(data, f"file:///t/{name}.txt")
    assert errors == [] and prepared.content == debian_file(PY_TESTSUITE, f"{folder}/{name}-utf8.txt").read_text("utf-8")


def test_zip_with_a_huge_relationships_part_is_typed_without_parsing_it():
    """Every ZIP is asked whether it is an XPS package: its ``_rels/.rels`` was parsed within 64 MiB, so a 67 KB
    ZIP holding 32 MB of empty elements there took 12 s and 800 MB to type. Relationships are read within 256 KiB;
    an XPS whose core properties are such a part still gives its pages."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("_rels/.rels", "<Relationships>" + "<a/>" * (8 * 1024**2) + "</Relationships>")
        archive.writestr("notes.txt", "important words")
    started = time.monotonic()
    assert SNIFF(out.getvalue(), "file:///z/a.zip") == "application/zip" and time.monotonic() - started < 2
    xps = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(tika_test_document("microsoft", "test_text.xps"))) as source, \
            zipfile.ZipFile(xps, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            target.writestr(info.filename, source.read(info) if info.filename != "docProps/core.xml" else
                            "<coreProperties>" + "<a/>" * (8 * 1024**2) + "</coreProperties>")
    started = time.monotonic()
    prepared, errors, typed = prepare_bytes(xps.getvalue(), "file:///z/a.xps")
    assert typed == "application/vnd.ms-xpsdocument" and errors == [] and time.monotonic() - started < 2
    assert "Parts of this are in italics and bold." in prepared.content and prepared.title == ""


def test_zip_with_a_visio_part_and_unclosed_overrides_is_typed_in_linear_time():
    """A 1 KB ZIP holding ``visio/document.xml`` and content types of 40,000 ``<Override `` without a ``>`` took
    44 s to type (the Visio main part's pattern tried again from each); the whole Tika Visio set still types."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Override " * 40_000)
        archive.writestr("visio/document.xml", "x")
    started = time.monotonic()
    assert SNIFF(out.getvalue(), "file:///z/a.vsdx") == "application/zip" and time.monotonic() - started < 2
    for name, typed in (("testVISIO.vsdx", "drawing"), ("testVISIO.vssm", "stencil.macroenabled.12"),
                        ("testVISIO.vstx", "template")):
        assert SNIFF(tika_test_document("microsoft", name), f"file:///z/{name}") == f"application/vnd.ms-visio.{typed}"
