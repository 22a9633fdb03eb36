"""Issue 24: per container kind, a member added, changed and removed between crawls — the container's text
follows its members. One tree of every kind, crawled twice, so the kinds share the crawls' cost (7z and ar:
tests/test_preparators_long_tail.py).

Kinds this project can write (ZIP, tar.gz, cpio by bsdtar, mbox) get real members: Tika's code test files, the
mails of perceval's test mailboxes; between the crawls one member changes, one goes and one comes. Kinds
nothing here can write (RAR needs non-free rar; PST, Outlook MSG with attachments, CHM, WARC have no free
writer on PyPI or Debian that makes real ones) get another real file of their kind at the same path: what the
first held is no longer found, what the second holds is."""

from __future__ import annotations

import io
import mailbox
import subprocess
import tarfile
import zipfile
from pathlib import Path

from tests.package_files import tika_test_document
from tests.test_preparators_mailboxes import perceval

CODE = ("testC.c", "testJAVA.java", "testGROOVY.groovy")


def _zip(path: Path, members: dict[str, bytes], _work: Path) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, body in members.items():
            archive.writestr(name, body)


def _tar_gz(path: Path, members: dict[str, bytes], _work: Path) -> None:
    with tarfile.open(path, "w:gz") as archive:
        for name, body in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(body)
            archive.addfile(info, io.BytesIO(body))


def _cpio(path: Path, members: dict[str, bytes], work: Path) -> None:
    folder = work / "cpio"
    folder.mkdir(exist_ok=True)
    for stale in folder.iterdir():
        stale.unlink()
    for name, body in members.items():
        (folder / name).write_bytes(body)
    subprocess.run(["bsdtar", "--format", "odc", "-cf", str(path), *members], cwd=folder, check=True)


def _mbox(path: Path, messages: list[bytes], work: Path) -> None:
    path.unlink(missing_ok=True)
    box = mailbox.mbox(str(path))
    for message in messages:
        box.add(message)
    box.close()


def _messages(name: str, work: Path) -> list[bytes]:
    source = work / name.rsplit("/", 1)[-1]
    source.write_bytes(perceval(name))
    return [message.as_bytes() for message in mailbox.mbox(str(source))]


ARCHIVES = {"members.zip": _zip, "members.tar.gz": _tar_gz, "members.cpio": _cpio}
# (name in the tree, first real file, second real file, a phrase only the first holds, one only the second holds)
SWAPPED = [
    ("archive.rar", ("pkg", "test-documents.rar"), ("pkg", "test-documents-enc.rar"),
     "Sample Excel Worksheet - Numbers and their Squares", None),
    ("folders.pst", ("microsoft", "testPST.pst"), ("microsoft", "testPST_variousBodyTypes.pst"),
     "Process loops infintely processing a CHM file", "Forwarded RTF"),
    ("attached.msg", ("microsoft", "testMSG_att_doc.msg"), ("microsoft", "testMSG_att_msg.msg"),
     "copyright 00A9", "Test Attachment from Nick Booth"),
    ("help.chm", ("microsoft", "testChm.chm"), ("microsoft", "chm/gpedit.CHM"),
     "how to use the control", "composant logiciel enfichable MMC"),
    ("capture.warc.gz", ("webarchive", "testWARC_multiple.warc.gz"), ("webarchive", "cc.warc.gz"),
     "1850 Slave Schedules to the 1850 Census", "open repository of web crawl data"),
]


def test_every_container_kind_follows_its_members_between_crawls(tmp_path, make_config, crawl, search):
    code = {name: tika_test_document("code", name) for name in CODE}
    root, work = tmp_path / "tree", tmp_path / "work"
    root.mkdir()
    work.mkdir()
    gnome, low_memory = _messages("mbox/mbox_complex.mbox", work)
    (protocol_buffers,) = _messages("mbox/mbox_single.mbox", work)

    def found(query: str) -> list[str]:
        return sorted(hit["url"].rsplit("/", 1)[1] for hit in search(config, query))

    for name, write in ARCHIVES.items():
        write(root / name, {"testC.c": code["testC.c"], "testJAVA.java": code["testJAVA.java"]}, work)
    _mbox(root / "list.mbox", [gnome, low_memory], work)
    for name, first, _second, _before, _after in SWAPPED:
        (root / name).write_bytes(tika_test_document(*first))
    config = make_config(root)
    run = crawl(config)
    assert run.code == 0, run.report.get("problems")
    assert found('"everyone\'s first program"') == found('"printf Apache Tika"') == sorted(ARCHIVES)
    assert found('"Revisiting the Gnome Bindings"') == found('"Low memory hacks"') == ["list.mbox"]
    for name, _first, _second, before, _after in SWAPPED:
        assert found(f'"{before}"') == [name], name

    changed = code["testC.c"].replace(b"Apache Tika!", b"Apache Beam!")
    for name, write in ARCHIVES.items():  # testC.c changed, testJAVA.java removed, testGROOVY.groovy added
        write(root / name, {"testC.c": changed, "testGROOVY.groovy": code["testGROOVY.groovy"]}, work)
    _mbox(root / "list.mbox", [gnome.replace(b"Gnome Bindings", b"Beam Bindings"), protocol_buffers], work)
    for name, _first, second, _before, _after in SWAPPED:
        (root / name).write_bytes(tika_test_document(*second))
    run = crawl(config)
    # the encrypted RAR is one failure: its text is gone, its name stays (a substitute document)
    assert run.code == 1 and [p["url"].rsplit("/", 1)[1] for p in run.report["problems"]] == ["archive.rar"]
    assert run.counts["changed"] == len(ARCHIVES) + 1 + len(SWAPPED)
    assert found('"printf Apache Tika"') == found('"everyone\'s first program"') == []
    assert found('"printf Apache Beam"') == found('"commenting out an alternative"') == sorted(ARCHIVES)
    assert found('"Gnome Bindings"') == found('"Low memory hacks"') == []
    assert found('"Beam Bindings"') == found('"Protocol Buffers anyone"') == ["list.mbox"]
    for name, _first, _second, before, after in SWAPPED:
        assert found(f'"{before}"') == [], name
        if after is not None:
            assert found(f'"{after}"') == [name], name
    assert "archive.rar" in found("archive.rar")
