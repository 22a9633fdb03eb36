"""Legacy Office files (LibreOffice's samples in tests/data/samples), the external preparator, MIME
detection of ZIP and OLE2 containers whatever the name says, and the isolation that bounds a preparation
in time and memory."""

from __future__ import annotations

import io
import os
import re
import resource
import signal
import time
import zipfile

import format_corpus
import pytest
from beamtrawl.transforms.preparators import BUILTIN, PreparationError, PreparatorSpec, Prepared
from beamtrawl.transforms.preparators.external import DEFAULTS, check_params, prepare_external
from beamtrawl.transforms.preparators.isolation import MAX_IN_FLIGHT, Isolated
from beamtrawl.transforms.preparators.legacy import prepare_legacy_office
from beamtrawl.transforms.preparators.mime import MimeSniffer

from tests.package_files import debian_file

SAMPLES = format_corpus.SAMPLES


@pytest.mark.parametrize("ext, mimetype, title, metadata, lines", [
    ("doc", "application/msword", "Legacy Word Sample", "Ada Lovelace Analytical engines",
     ["Notes on the Engine", "The quick brown fox consults the analytical engine.", "cellalpha\tcellbeta",
      "Umlauts: Grüße aus Köln."]),
    ("xls", "application/vnd.ms-excel", "Legacy Excel Sample", "Grace Hopper",
     ["Budget", "Item Amount", "Lighthouse keeper wages 1200", "Lamp oil 3.5"]),
    ("ppt", "application/vnd.ms-powerpoint", "Legacy PowerPoint Sample", "Alan Turing",
     ["Quarterly Lighthouse Review", "Foghorn maintenance is overdue", "Speaker notes mention seagulls"]),
])
def test_legacy_office_samples(ext, mimetype, title, metadata, lines):
    data = (SAMPLES / f"libreoffice.{ext}").read_bytes()
    assert MimeSniffer()(data, f"file:///x/misnamed.{'pdf' if ext == 'doc' else 'txt'}") == mimetype
    prepared = prepare_legacy_office(data, f"file:///x/a.{ext}", mimetype, {})
    assert prepared.title == title and prepared.metadata.startswith(metadata)
    content = prepared.content.splitlines()
    assert all(line in content for line in lines), content


@pytest.mark.parametrize("data, reason", [
    (b"", "not an OLE2 compound file (legacy Office)"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 100, "not readable as an OLE2 compound file"),
    ((SAMPLES / "libreoffice.doc").read_bytes()[:5000], "not readable as"),
])
def test_legacy_office_broken(data, reason):
    with pytest.raises(PreparationError, match=reason.replace("(", r"\(").replace(")", r"\)")):
        prepare_legacy_office(data, "file:///x/a.doc", "application/msword", {})


# -- external ---------------------------------------------------------------------------------------------

def external(command: str, **params) -> dict:
    return check_params({**dict(DEFAULTS), "command": command, **params})


@pytest.mark.parametrize("name", ["bullets.sdv", "diagrams.sdv", "network.sdv"])
def test_another_programs_ole2_file_is_unsupported_not_broken(name):
    """LibreOffice's gallery themes are OLE2 files of StarOffice: indexed by their properties with a
    report line, never a failure that would count toward max_failed_ratio (issue 14, item 2)."""
    data = debian_file("libreoffice-common", f"usr/lib/libreoffice/share/gallery/{name}").read_bytes()
    prepared = prepare_legacy_office(data, f"file:///gallery/{name}", "application/x-ole-storage", {})
    assert prepared.content == "" and prepared.partial.startswith("an OLE2 file of another program")


def test_external_command_output_is_the_content():
    params = external("sed s/quiet/LOUD/ ${filename}")
    prepared = prepare_external(b"a quiet line\n", "file:///x/a note.ps", "application/postscript", params)
    assert prepared == Prepared(content="a LOUD line")


def test_external_file_name_keeps_the_extension_and_cannot_inject_commands():
    params = external("sh -c 'echo \"$1\"' sh ${filename}")
    prepared = prepare_external(b"", "file:///x/$(touch%20pwned);.ps", "application/postscript", params)
    assert prepared.content.endswith(".ps") and "beamtrawl-" in prepared.content
    assert not os.path.exists("pwned")


def test_external_exit_code_is_checked():
    params = external("sh -c 'echo half; echo broken input >&2; exit 3' sh ${filename}")
    with pytest.raises(PreparationError, match="^sh exited with 3: broken input$"):
        prepare_external(b"x", "file:///x/a.ps", "application/postscript", params)
    params = external("sh -c 'echo half; exit 3' sh ${filename}", check_exit_code=False)
    assert prepare_external(b"x", "file:///x/a.ps", "", params).content == "half"


def test_external_timeout_kills_the_command_and_its_children():
    params = external("sh -c 'sleep 30 & sleep 30; echo never' sh ${filename}", timeout=0.5)
    start = time.monotonic()
    with pytest.raises(PreparationError, match=r"^sh timed out after 0.5 s$"):
        prepare_external(b"x", "file:///x/a.ps", "", params)
    assert time.monotonic() - start < 5



def test_a_program_flooding_its_output_costs_no_memory():
    """mdb-tables on a truncated database writes warnings at 10 MB/s: communicate() kept them all (6 GB in ten
    minutes). 150 MB on each pipe now leave the first bytes of each and no trace in the process's size."""
    params = external("sh -c 'head -c 150000000 /dev/zero | tr \"\\0\" w >&2; echo start; "
                      "head -c 150000000 /dev/zero; exit 2' sh ${filename}", max_output_bytes=1000)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(PreparationError, match="^sh exited with 2: w{100}"):
        prepare_external(b"x", "file:///x/a.ps", "", params)
    params = dict(params, check_exit_code=False)
    assert prepare_external(b"x", "file:///x/a.ps", "", params).content.startswith("start")
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100 * 1024  # KiB: under 100 MB


# -- MIME of containers -------------------------------------------------------------------------------------

def _reordered(data: bytes) -> bytes:
    """The same members in reverse order, which hides the type from libmagic."""
    source, buffer = zipfile.ZipFile(io.BytesIO(data)), io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as target:
        for name in reversed(source.namelist()):
            target.writestr(name, source.read(name))
    return buffer.getvalue()


@pytest.mark.parametrize("data, name, expected", [
    (format_corpus._docx("T", "p"), "report.zip",
     "application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
    (_reordered(format_corpus._docx("T", "p")), "report.bin",
     "application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
    (_reordered(format_corpus._xlsx("T", "p")), "sheet.docx",
     "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
    (_reordered(format_corpus._pptx("T", "p")), "slides",
     "application/vnd.openxmlformats-officedocument.presentationml.presentation"),
    (_reordered((SAMPLES / "libreoffice.odt").read_bytes()), "text.zip", "application/vnd.oasis.opendocument.text"),
    (_reordered((SAMPLES / "libreoffice.ods").read_bytes()), "calc.odt",
     "application/vnd.oasis.opendocument.spreadsheet"),
    (format_corpus._epub("T", "p"), "book.zip", "application/epub+zip"),
    (format_corpus._zip({"META-INF/MANIFEST.MF": b"Manifest-Version: 1.0\n", "A.class": b"\xca\xfe"}), "lib.zip",
     "application/java-archive"),
    (format_corpus._zip({"a.txt": b"plain zip"}), "looks.docx", "application/zip"),
    ((SAMPLES / "libreoffice.xls").read_bytes(), "sheet.doc", "application/vnd.ms-excel"),
    ((SAMPLES / "libreoffice.ppt").read_bytes(), "deck.xls", "application/vnd.ms-powerpoint"),
])
def test_container_type_comes_from_its_members_not_its_name(data, name, expected):
    assert MimeSniffer()(data, f"file:///x/{name}") == expected


def test_first_bytes_of_a_zip_keep_libmagics_answer():
    """An oversize file's first bytes have no central directory to ask: libmagic's answer stands, whatever
    the file is called (an answer by name would say "document" for a.docx only)."""
    import magic

    data = format_corpus._docx("T", "p")[:4096]
    libmagic = magic.from_buffer(data, mime=True)
    assert {name: MimeSniffer()(data, f"file:///x/{name}") for name in ("a.docx", "a.zip", "a.bin")} == dict.fromkeys(
        ("a.docx", "a.zip", "a.bin"), libmagic)


# -- isolation --------------------------------------------------------------------------------------------

def hang(data, url, mimetype, params):
    while True:
        time.sleep(3600)


def hog(data, url, mimetype, params):
    return Prepared(content="x" * (2 * 1024**3))


def crash(data, url, mimetype, params):
    os.kill(os.getpid(), signal.SIGSEGV)


def echo(data, url, mimetype, params):
    return Prepared(title=str(os.getpid()), content=data.decode())


def refuse(data, url, mimetype, params):
    raise PreparationError("refused")


def abort(data, url, mimetype, params):
    os.abort()


def exit3(data, url, mimetype, params):
    os._exit(3)


SPECS = (PreparatorSpec("hang", hang, url_pattern=re.compile(r"\.hang$"), priority=9),
         PreparatorSpec("hog", hog, url_pattern=re.compile(r"\.hog$"), priority=9),
         PreparatorSpec("crash", crash, url_pattern=re.compile(r"\.crash$"), priority=9),
         PreparatorSpec("echo", echo, ("text/plain",)), *BUILTIN)


@pytest.fixture
def isolated():
    runner = Isolated(SPECS, timeout=2, memory_limit=512 * 1024**2)
    yield runner
    runner.close()


def test_isolated_preparation_returns_what_the_preparator_made(isolated):
    prepared, errors = isolated.prepare(b"hello", "file:///x/a.txt", "text/plain")
    assert prepared.content == "hello" and errors == [] and int(prepared.title) != os.getpid()
    again, _ = isolated.prepare(b"again", "file:///x/b.txt", "text/plain")
    assert again.title == prepared.title  # one child serves document after document


def test_a_hanging_preparator_is_killed_and_the_next_document_is_prepared(isolated):
    first, _ = isolated.prepare(b"before", "file:///x/a.txt", "text/plain")
    start = time.monotonic()
    prepared, errors = isolated.prepare(b"loop", "file:///x/a.hang", "application/octet-stream")  # only hang
    assert prepared is None and errors == ["hang: timed out after 2 s (the preparing process was killed)"]
    assert time.monotonic() - start < 30  # killed, not left to loop (2 s; generous for a loaded machine)
    after, errors = isolated.prepare(b"after", "file:///x/b.txt", "text/plain")
    assert after.content == "after" and after.title != first.title and isolated.restarts == 1


def test_memory_is_limited(isolated):
    prepared, errors = isolated.prepare(b"", "file:///x/a.hog", "application/octet-stream")
    assert prepared is None and errors == ["hog: MemoryError"]
    assert isolated.prepare(b"fine", "file:///x/b.txt", "text/plain")[0].content == "fine"


def test_after_a_hang_the_next_preparator_reads_the_document(isolated):
    first, _ = isolated.prepare(b"before", "file:///x/a.txt", "text/plain")
    prepared, errors = isolated.prepare(b"loop", "file:///x/a.hang", "text/plain")  # hang, then echo
    assert prepared.content == "loop" and prepared.title != first.title and isolated.restarts == 1
    assert errors == ["hang: timed out after 2 s (the preparing process was killed)"]


def test_a_crashing_preparator_is_a_report_line(isolated):
    prepared, errors = isolated.prepare(b"", "file:///x/a.crash", "application/octet-stream")
    assert prepared is None
    assert errors == ["crash: the preparing process was killed by SIGSEGV (memory limit 536870912 bytes)"]
    assert isolated.prepare(b"fine", "file:///x/b.txt", "text/plain")[0].content == "fine"


def test_each_killed_preparator_is_a_failure_and_the_chain_goes_on():
    """A new child for each preparator after one that hung or crashed; failures before it are kept."""
    specs = (PreparatorSpec("refuse", refuse, url_pattern=re.compile(r"\.many$"), priority=4),
             PreparatorSpec("hang", hang, url_pattern=re.compile(r"\.many$"), priority=3),
             PreparatorSpec("abort", abort, url_pattern=re.compile(r"\.many$"), priority=2),
             PreparatorSpec("exit3", exit3, url_pattern=re.compile(r"\.many$"), priority=1),
             PreparatorSpec("echo", echo, url_pattern=re.compile(r"\.many$")))
    runner = Isolated(specs, timeout=2, memory_limit=0)
    try:
        prepared, errors = runner.prepare(b"at last", "file:///x/a.many", "text/plain")
    finally:
        runner.close()
    assert prepared.content == "at last" and runner.restarts == 3 and errors == [
        "refuse: refused", "hang: timed out after 2 s (the preparing process was killed)",
        "abort: the preparing process was killed by SIGABRT", "exit3: the preparing process exited with 3"]


def test_failures_before_a_success_are_kept(isolated):
    specs = (PreparatorSpec("pdf_first", BUILTIN[1].func, ("text/plain",), priority=5), *SPECS)
    runner = Isolated(specs, timeout=5, memory_limit=0)
    try:
        prepared, errors = runner.prepare(b"not a pdf", "file:///x/a.txt", "text/plain")
    finally:
        runner.close()
    assert prepared.content == "not a pdf" and len(errors) == 1 and errors[0].startswith("pdf_first: ")


def logged(data, url, mimetype, params):
    with open(params["log"], "a") as log:
        log.write(url + "\n")
    return Prepared(title=str(os.getpid()), content=data.decode())


@pytest.fixture
def queued(tmp_path):
    """A runner whose documents named .hang or .abort hang or crash before ``logged`` reads them; the log
    lists every document ``logged`` prepared, once per preparation."""
    log = tmp_path / "prepared.log"
    log.touch()
    specs = (PreparatorSpec("hang", hang, url_pattern=re.compile(r"\.hang$"), priority=9),
             PreparatorSpec("abort", abort, url_pattern=re.compile(r"\.abort$"), priority=9),
             PreparatorSpec("logged", logged, ("text/plain",), params=(("log", str(log)),)))
    runner = Isolated(specs, timeout=2, memory_limit=0)
    yield runner, log
    runner.close()


def submit_all(runner, names):
    return [runner.submit(name.encode(), f"file:///x/{name}", "text/plain") for name in names]


def test_documents_wait_in_the_pipe_and_are_answered_in_order(queued):
    runner, log = queued
    names = [f"{i}.txt" for i in range(40)]
    tickets = submit_all(runner, names)
    assert len(runner.queue) == MAX_IN_FLIGHT  # the next documents wait while the child prepares one
    results = [t.result() for t in reversed(tickets)][::-1]  # the last one first: it collects the others
    assert [(p.content, errors) for p, errors in results] == [(name, []) for name in names]
    assert len({p.title for p, _ in results}) == 1 and runner.restarts == 0
    assert log.read_text().split() == [f"file:///x/{name}" for name in names]


def test_a_hang_in_a_queue_costs_only_its_own_preparator(queued):
    runner, log = queued
    names = ["a.txt", "b.txt", "c.hang", "d.txt", "e.txt", "f.txt"]
    results = [t.result() for t in submit_all(runner, names)]
    assert [p.content for p, _ in results] == names  # the next preparator read the one that hung
    assert [errors for _, errors in results] == [
        [], [], ["hang: timed out after 2 s (the preparing process was killed)"], [], [], []]
    assert runner.restarts == 1
    assert log.read_text().split() == [f"file:///x/{name}" for name in names]  # each prepared once, in order


def test_a_crash_in_a_queue_loses_no_document(queued):
    runner, log = queued
    names = ["a.txt", "b.abort", "c.txt", "d.txt"]
    tickets = submit_all(runner, names[:3])
    runner.process.wait()  # dead on b.abort, a's answer still in its pipe
    tickets += submit_all(runner, names[3:])  # into a dead child's pipe: answers read, the rest sent again
    results = [t.result() for t in tickets]
    assert [p.content for p, _ in results] == names
    assert [errors for _, errors in results] == [[], ["abort: the preparing process was killed by SIGABRT"], [], []]
    assert runner.restarts == 1
    assert log.read_text().split() == [f"file:///x/{name}" for name in names]


def test_a_document_larger_than_the_pipe_goes_alone(queued):
    runner, log = queued
    before = submit_all(runner, ["a.txt", "b.txt", "c.txt"])
    big = "y" * (runner.pipe_pages * os.sysconf("SC_PAGE_SIZE") + 1)
    large = runner.submit(big.encode(), "file:///x/big.txt", "text/plain")
    assert list(runner.queue) == [large] and all(t.value for t in before)  # sent to a child with nothing else
    after = submit_all(runner, ["d.txt", "e.txt"])
    assert large.value is not None and list(runner.queue) == after  # the next ones waited for it
    results = [t.result() for t in [*before, large, *after]]
    assert [p.content for p, _ in results] == ["a.txt", "b.txt", "c.txt", big, "d.txt", "e.txt"]
    assert all(errors == [] for _, errors in results) and runner.restarts == 0
    assert log.read_text().split() == [f"file:///x/{n}" for n in ("a.txt", "b.txt", "c.txt", "big.txt", "d.txt",
                                                                   "e.txt")]


def test_a_preparator_takes_bytes_or_a_readable_stream():
    spec = next(p for p in BUILTIN if p.name == "legacy_office")
    with open(SAMPLES / "libreoffice.xls", "rb") as stream:
        from_stream = spec(stream, "file:///x/a.xls", "application/vnd.ms-excel")
    from_bytes = spec((SAMPLES / "libreoffice.xls").read_bytes(), "file:///x/a.xls", "application/vnd.ms-excel")
    assert from_stream == from_bytes and from_stream.title == "Legacy Excel Sample"
