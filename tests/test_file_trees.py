"""Crawls of awkward real trees: symlinks, missing roots, overlapping start URLs, guards, big trees."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import yaml

from tests.conftest import beamtrawl


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def names(hits: list[dict]) -> list[str]:
    return sorted(h["url"].split("/docs/", 1)[-1] for h in hits)


def test_symlinks_not_followed_by_default(tmp_path, make_config, crawl, search):
    root, outside = tmp_path / "docs", tmp_path / "outside"
    write(root, {"a.txt": "anchor text"})
    write(outside, {"o.txt": "outsider text"})
    (root / "linked").symlink_to(outside)
    (root / "broken.txt").symlink_to(tmp_path / "nowhere.txt")
    config = make_config(root)

    run = crawl(config)
    assert run.code == 0, run.stderr  # a link not followed is skipped, dangling or not: no failure
    assert run.problems("discover") == {}
    assert run.counts["symlink_skipped"] == 2 and run.counts["failed"] == 0 and run.counts["written"] == 1
    assert names(search(config, "text")) == ["a.txt"]


def test_a_followed_dangling_link_is_a_dead_link_and_withholds_no_delete(tmp_path, make_config, crawl, search):
    """Packages ship dangling links; one once printed "NO DELETES RAN: 1 of 4 documents failed"."""
    root = tmp_path / "docs"
    write(root, {f"f{i}.txt": f"linkword {i}" for i in range(4)})
    config = make_config(root, follow_symlinks=True, max_delete_ratio=0.5, max_failed_ratio=0.1)
    assert crawl(config).counts["written"] == 4

    (root / "f0.txt").unlink()
    (root / "broken.txt").symlink_to(tmp_path / "nowhere.txt")
    run = crawl(config)
    assert run.code == 0, run.stdout + run.stderr
    assert run.problems("discover") == {f"file://{root}/broken.txt": "broken symbolic link"}
    assert run.counts["dead_link"] == 1 and run.counts["failed"] == 0 and run.counts["deleted"] == 1
    assert "1 dead links" in run.stdout
    assert names(search(config, "linkword")) == ["f1.txt", "f2.txt", "f3.txt"]


def test_followed_symlinks_cut_loops_and_index_each_file_once(tmp_path, make_config, crawl, search):
    root, outside = tmp_path / "docs", tmp_path / "outside"
    write(root, {"a/a.txt": "alpha loopword", "b/b.txt": "beta loopword"})
    write(outside, {"o.txt": "outsider loopword"})
    (root / "a" / "back").symlink_to(root)  # a loop: docs/a/back -> docs
    (root / "a" / "self").symlink_to(root / "a")  # a loop onto itself
    (root / "b" / "out1").symlink_to(outside)
    (root / "b" / "out2").symlink_to(outside)  # the same folder twice
    config = make_config(root, follow_symlinks=True)

    run = crawl(config)
    assert run.code == 0, run.stderr
    assert names(search(config, "loopword")) == ["a/a.txt", "b/b.txt", "b/out1/o.txt"]
    loops = {url: reason for url, reason in run.problems().items() if "loop" in reason}
    assert set(loops) == {f"file://{root}/a/back", f"file://{root}/a/self"}


def test_unavailable_start_url_keeps_its_documents(tmp_path, make_config, crawl, search):
    root = tmp_path / "docs"
    write(root, {f"f{i}.txt": f"keeper number {i}" for i in range(5)})
    config = make_config(root)
    assert crawl(config).counts["written"] == 5

    root.rename(tmp_path / "offline")  # the share went away for an hour
    run = crawl(config)
    assert run.code == 1
    assert run.counts["kept"] == 5 and run.counts["deleted"] == 0
    assert "unavailable" in run.problems()[f"file://{root}"]
    assert len(search(config, "keeper")) == 5


def test_files_whose_status_cannot_be_read_keep_their_documents(tmp_path, make_config, crawl, search):
    """A folder whose names can be read but not its files' status (mode r--: no search permission) still holds
    them: their documents stay, with a line each, where they were deleted as vanished before."""
    root = tmp_path / "docs"
    write(root, {"shut/b.txt": "statword two", "shut/c.txt": "statword three", "open/a.txt": "statword one",
                 **{f"open/{n}.txt": "other" for n in range(20)}})
    config = make_config(root)
    assert crawl(config).counts["written"] == 23

    (root / "shut").chmod(0o444)
    try:
        run = crawl(config)
    finally:
        (root / "shut").chmod(0o755)
    assert run.code == 1, run.stderr
    assert run.counts["deleted"] == 0 and run.counts["kept"] == 2
    assert "Permission denied" in run.problems("discover")[f"file://{root}/shut/b.txt"]
    assert names(search(config, "statword")) == ["open/a.txt", "shut/b.txt", "shut/c.txt"]


def test_overlapping_start_urls(tmp_path, make_config, crawl, search):
    bla, blaber = tmp_path / "bla", tmp_path / "blaber"
    write(bla, {"x.txt": "overlap one", "sub/y.txt": "overlap two"})
    write(blaber, {"z.txt": "overlap three"})
    starts = [{"url": f"file://{p}"} for p in (bla, blaber, bla / "sub")]
    config = make_config(bla, start=starts, whitelist=[{"prefix": s["url"]} for s in starts])

    run = crawl(config)
    assert run.code == 0, run.stderr
    hits = search(config, "overlap")
    assert sorted(h["url"] for h in hits) == [f"file://{bla}/sub/y.txt", f"file://{bla}/x.txt",
                                              f"file://{blaber}/z.txt"]

    (bla / "x.txt").unlink()  # only the folder that held it decides; blaber is not "under" bla
    assert crawl(config).counts["deleted"] == 1
    assert len(search(config, "overlap")) == 2


def test_delete_guards_withhold_every_delete(tmp_path, make_config, crawl, search):
    root = tmp_path / "docs"
    write(root, {f"f{i}.txt": f"guarded file {i}" for i in range(10)})
    config = make_config(root, max_delete_ratio=0.5)
    assert crawl(config).code == 0

    for i in range(6):
        (root / f"f{i}.txt").unlink()
    run = crawl(config)
    assert run.code == 2
    assert "would delete 6 of 10" in run.report["deletes_withheld"]
    assert "NO DELETES RAN" in run.stdout
    assert len(search(config, "guarded")) == 10

    for i in range(6, 10):
        (root / f"f{i}.txt").chmod(0)
    (root / "new.txt").write_text("guarded newcomer")
    os.utime(root / "f9.txt", ns=(0, 1))
    config = make_config(root, max_failed_ratio=0.1, max_delete_ratio=1.0)
    for i in range(6, 10):
        os.utime(root / f"f{i}.txt", ns=(0, i))  # changed, then unreadable: 4 of 5 fail
    run = crawl(config)
    assert run.code == 2
    assert "max_failed_ratio" in run.report["deletes_withheld"]
    assert len(search(config, "guarded")) == 11


def test_rules_changed_deletes_what_is_no_longer_accepted(tmp_path, make_config, crawl, search):
    root = tmp_path / "docs"
    write(root, {"keep/a.txt": "ruled one", "drop/b.txt": "ruled two", "drop/c.txt": "ruled three",
                 "d.txt": "ruled four"})
    config = make_config(root)
    assert crawl(config).counts["written"] == 4
    config = make_config(root, blacklist=[{"prefix": f"file://{root}/drop"}])
    run = crawl(config)
    assert run.counts["no_longer_accepted"] == 2 and run.counts["deleted"] == 2
    assert names(search(config, "ruled")) == ["d.txt", "keep/a.txt"]


def test_big_tree_over_several_rounds(tmp_path, make_config, crawl, search):
    root = tmp_path / "docs"
    for i in range(10_000):
        folder = root / f"d{i % 50:02d}" / f"e{i % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"file {i}.txt").write_text(f"bulk document number{i}")
    config = make_config(root, walk_budget=300, discovery_rounds=3)

    run = crawl(config)
    assert run.code == 0, run.stderr
    assert run.counts["accepted"] == 10_000 and run.counts["written"] == 10_000
    assert run.counts["duplicate"] == 0
    assert run.report["documents_in_index"] == 10_000
    assert len({hit["url"] for hit in search(config, "bulk", limit=10_000)}) == 10_000  # --limit's maximum
    assert names(search(config, "number9999")) == ["d49/e3/file%209999.txt"]

    again = crawl(config)
    assert again.counts["unchanged"] == 10_000 and again.counts["read"] == 0


def test_unreadable_new_file_and_oversize(tmp_path, make_config, crawl, search):
    root = tmp_path / "docs"
    write(root, {"ok.txt": "sizeword small", "big.txt": "sizeword " * 200, "secret.txt": "sizeword hidden"})
    (root / "secret.txt").chmod(0)
    config = make_config(root, max_file_size=1000)

    run = crawl(config)
    assert run.code == 1
    assert "Permission denied" in run.problems("read")[f"file://{root}/secret.txt"]
    assert "max_file_size" in run.problems("read")[f"file://{root}/big.txt"]
    assert names(search(config, "sizeword")) == ["ok.txt"]  # big.txt holds no text
    assert names(search(config, "big")) == ["big.txt"]  # but is found by its name


def test_switching_the_catch_all_off_deletes_what_it_indexed(tmp_path, make_config, crawl, search):
    """A type nothing reads keeps no document once metadata_only is off: the index ends as a first crawl
    with that configuration would leave it (issue 14 item 5)."""
    root = tmp_path / "docs"
    write(root, {"notes.txt": "catchword kept"})
    (root / "blob.bin").write_bytes(bytes(range(256)) * 8)
    config = make_config(root)
    first = crawl(config)
    assert first.code == 0 and first.counts["unsupported"] == 1, first.stderr
    assert names(search(config, "blob")) == ["blob.bin"]

    config = make_config(root, preparators=[{"name": "metadata_only", "enabled": False}])
    run = crawl(config)
    assert run.code == 0, run.stderr
    assert (run.counts["skipped_unread"], run.counts["no_longer_read"], run.counts["deleted"]) == (1, 1, 1)
    assert run.report["deleted_urls"] == [f"file://{root}/blob.bin"]
    assert search(config, "blob") == [] and names(search(config, "catchword")) == ["notes.txt"]


def test_configuration_error_is_one_line_and_exit_2(tmp_path):
    config = tmp_path / "bad.yaml"
    config.write_text(yaml.safe_dump({"start": [{"url": "file:///srv"}], "whitelist": [{"regex": "(a"}],
                                      "index": {"path": "x.sqlite"}}))
    done = beamtrawl("crawl", str(config))
    assert done.returncode == 2
    assert done.stderr.strip() == (f"{config}: whitelist[0].regex: missing ), unterminated subpattern "
                                   "at position 0")
    assert not (tmp_path / "x.sqlite").exists()


def test_example_configuration_crawls(tmp_path, crawl, search):
    shutil.copytree(Path(__file__).resolve().parent.parent / "examples", tmp_path / "examples",
                    ignore=shutil.ignore_patterns("beamtrawl-index.*"))
    config = tmp_path / "examples" / "crawl.yaml"
    run = crawl(config)
    assert run.code == 0, run.stderr
    assert run.counts["written"] >= 30
    assert search(config, "sourdough")[0]["url"].endswith("sourdough-bread.md")


def test_office_pdf_mail_and_archives_are_searchable(tmp_path, make_config, crawl, search):
    import io
    import zipfile
    from email.message import EmailMessage

    import docx
    from reportlab.pdfgen import canvas

    root = tmp_path / "docs"
    root.mkdir()
    document = docx.Document()
    document.add_heading("Quarterly zeppelin review", level=1)
    document.add_paragraph("The zeppelin hangar needs a new roof.")
    document.save(root / "review.docx")
    pdf = canvas.Canvas(str(root / "manual.pdf"))
    pdf.drawString(72, 720, "Calibrate the xylophone before every concert.")
    pdf.save()
    mail = EmailMessage()
    mail["From"] = "Ada <ada@example.org>"
    mail["Subject"] = "Walrus sighting"
    mail.set_content("A walrus was seen near the pier.")
    (root / "note.eml").write_bytes(bytes(mail))
    packed = io.BytesIO()
    with zipfile.ZipFile(packed, "w") as archive:
        archive.writestr("inner/readme.txt", "the quokka lives in the archive")
    (root / "bundle.zip").write_bytes(packed.getvalue())
    (root / "broken.pdf").write_bytes(b"%PDF-1.4\n this is not a real pdf")
    config = make_config(root)

    run = crawl(config)
    assert run.code == 1  # broken.pdf: a substitute document and a report line
    assert "pdf:" in run.problems("prepare")[f"file://{root}/broken.pdf"]
    for word, name in [("zeppelin", "review.docx"), ("xylophone", "manual.pdf"),
                       ("walrus", "note.eml"), ("quokka", "bundle.zip"), ("broken", "broken.pdf")]:
        assert names(search(config, word)) == [name], word
    assert search(config, "walrus")[0]["title"] == "Walrus sighting from Ada <ada@example.org>"
