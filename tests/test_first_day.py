"""What a new user meets on the first day (issue 28), through the real command: one index per configuration,
Ctrl-C, a start folder that is not there, the small messages, the report's lines and the progress display."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import yaml
from beamtrawl.pipeline.interrupt import descendants
from beamtrawl.runners.forked_workers import WORKER_NAME

from tests.conftest import beamtrawl, beamtrawl_command
from tests.real_corpus import corpus

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "corpus"


def _files(folder: Path) -> list[str]:
    """What is in ``folder``, but for the files SQLite keeps beside an index it opened."""
    return sorted(n for n in os.listdir(folder) if not n.endswith(("-shm", "-wal", ".lock")))


def test_init_names_the_index_after_the_configuration_and_another_configuration_is_refused(tmp_path):
    first, second = tmp_path / "one", tmp_path / "two"
    for folder, text in ((first, "sourdough starter"), (second, "rye bread")):
        folder.mkdir()
        (folder / "a.txt").write_text(text)
        (folder / "b.txt").write_text(text + " again")
    assert beamtrawl("init", str(first), "-o", str(tmp_path / "bread.yaml"), check_dac=False).returncode == 0
    assert beamtrawl("init", str(second), "-o", str(tmp_path / "rye.yaml"), check_dac=False).returncode == 0
    assert yaml.safe_load((tmp_path / "bread.yaml").read_text())["index"]["path"] == "bread-index.sqlite"
    assert yaml.safe_load((tmp_path / "rye.yaml").read_text())["index"]["path"] == "rye-index.sqlite"

    crawled = beamtrawl("crawl", str(tmp_path / "bread.yaml"), "--direct_num_workers=1")
    assert crawled.returncode == 0, crawled.stderr
    index = tmp_path / "bread-index.sqlite"
    report = (tmp_path / "bread-index.report.json").read_text()
    before = _files(tmp_path)
    other = beamtrawl("crawl", str(tmp_path / "rye.yaml"), "--set", f"index.path={index}", "--direct_num_workers=1")
    problem = other.stderr.strip().splitlines()
    assert other.returncode == 2 and len(problem) == 1, other.stderr
    assert "bread.yaml" in problem[0] and "rye.yaml" in problem[0] and "--force-other-config" in problem[0]
    assert _files(tmp_path) == before and (tmp_path / "bread-index.report.json").read_text() == report  # no work
    dry = beamtrawl("crawl", str(tmp_path / "rye.yaml"), "--set", f"index.path={index}", "--dry-run")
    assert dry.returncode == 2 and "refused: " in dry.stdout and "--force-other-config" in dry.stdout
    with sqlite3.connect(index) as db:
        assert db.execute("SELECT count(*) FROM docs").fetchone()[0] == 2

    edited = yaml.safe_load((tmp_path / "bread.yaml").read_text())  # the same file, a start URL added: its own
    edited["start"].append({"url": second.as_uri(), "parse": True, "index": False})
    edited["whitelist"].append({"prefix": second.as_uri()})
    (tmp_path / "bread.yaml").write_text(yaml.safe_dump(edited))
    assert beamtrawl("crawl", str(tmp_path / "bread.yaml"), "--direct_num_workers=1").returncode == 0

    forced = beamtrawl("crawl", str(tmp_path / "rye.yaml"), "--set", f"index.path={index}", "--force-other-config",
                       "--direct_num_workers=1")
    assert forced.returncode == 0, forced.stderr
    again = beamtrawl("crawl", str(tmp_path / "bread.yaml"), "--direct_num_workers=1")  # rye.yaml owns it now
    assert again.returncode == 2 and "rye.yaml" in again.stderr


def _group_members(pgid: int) -> list[int]:
    members = []
    for name in os.listdir("/proc"):
        try:
            with open(f"/proc/{name}/stat", encoding="ascii", errors="replace") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(name))
    return members


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _workers_started(pid: int) -> bool:
    """A worker at work: Beam's own process, or one forked from the command (runners/forked_workers.py)."""
    for child in descendants(pid):
        try:
            if (b"local_worker" in Path(f"/proc/{child}/cmdline").read_bytes()
                    or Path(f"/proc/{child}/comm").read_text().strip() == WORKER_NAME):
                return True
        except OSError:
            continue
    return False


def test_ctrl_c_to_the_process_group_says_one_line_writes_a_partial_report_and_stops_everything(tmp_path,
                                                                                                 make_config):
    config = make_config(corpus())
    command = beamtrawl_command("crawl", str(config), "--direct_num_workers=2", check_dac=False)
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True, cwd=ROOT)
    try:
        while process.poll() is None and not _workers_started(process.pid):
            time.sleep(0.2)
        time.sleep(2)  # the workers are at work
        crawl_processes = descendants(process.pid)  # workers and preparing processes
        os.killpg(process.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole process group
        _out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert "interrupted: nothing was deleted; the next crawl goes on from here" in err
    assert err.strip().splitlines()[-1].startswith("beamtrawl-summary exit=130 ")
    report = json.loads((tmp_path / "index.report.json").read_text())
    assert report["interrupted"] and report["exit_code"] == 130 and "counts" in report
    assert len(crawl_processes) >= 2 and _group_members(process.pid) == []
    deadline = time.monotonic() + 30  # the killed ones are reaped by init; none goes on working
    while any(_running(p) for p in crawl_processes) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(_running(p) for p in crawl_processes)


def test_a_start_folder_that_is_not_there_is_one_line_before_any_work(tmp_path, make_config):
    config = make_config(tmp_path / "no such folder")
    done = beamtrawl("crawl", str(config), "--direct_num_workers=1")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert "no such folder" in lines[0] and "does not exist" in lines[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["crawl.yaml"]  # no index, no report, no work folder


def test_skipped_symbolic_links_are_one_summary_line_and_init_writes_the_key_commented(tmp_path):
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "real.txt").write_text("a real file")
    (tmp_path / "elsewhere.txt").write_text("a file outside the tree")
    (tree / "link.txt").symlink_to(tmp_path / "elsewhere.txt")
    (tree / "dangling.txt").symlink_to(tmp_path / "gone.txt")
    config = tmp_path / "docs.yaml"
    assert beamtrawl("init", str(tree), "-o", str(config), check_dac=False).returncode == 0
    text = config.read_text()
    assert "\n# follow_symlinks: true " in text
    done = beamtrawl("crawl", str(config), "--direct_num_workers=1")
    assert done.returncode == 0, done.stderr
    assert "2 symbolic links skipped, not followed (follow_symlinks: true follows them" in done.stdout
    assert "matched no URL" not in done.stdout + done.stderr  # init's .git and ~ rules, on a tree without them
    assert "crawling 1 start URL into" in done.stderr and "1 start URLs" not in done.stderr

    config.write_text(text.replace("# follow_symlinks: true", "follow_symlinks: true"))
    followed = beamtrawl("crawl", str(config), "--direct_num_workers=1")
    assert followed.returncode == 0, followed.stderr
    assert "symbolic links skipped" not in followed.stdout


def test_an_index_folder_that_cannot_be_written_names_the_index_and_the_folder(tmp_path, make_config):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("hello")
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        config = make_config(tmp_path / "docs", index={"path": str(locked / "i.sqlite")})
        done = beamtrawl("crawl", str(config), "--direct_num_workers=1")
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2 and len(lines) == 1, done.stderr
        assert f"index {locked / 'i.sqlite'}: its folder {locked} cannot be written" in lines[0]
        assert "crawl report" not in lines[0]
        deeper = make_config(tmp_path / "docs", index={"path": str(locked / "new" / "i.sqlite")})
        refused = beamtrawl("crawl", str(deeper), "--direct_num_workers=1")
        assert refused.returncode == 2 and f"its folder {locked / 'new'} cannot be created" in refused.stderr
    finally:
        locked.chmod(0o755)
    missing = make_config(tmp_path / "docs", index={"path": str(tmp_path / "new" / "i.sqlite")})
    assert beamtrawl("crawl", str(missing), "--direct_num_workers=1").returncode == 0  # made, as the index would


def test_help_has_no_markup_and_every_argument_says_what_it_is():
    from beamtrawl.pipeline.cli import _parser

    commands = _parser()._subparsers._group_actions[0].choices
    for name, sub in [("", None), *commands.items(), *sub_commands(commands)]:
        shown = beamtrawl(*name.split(), "--help", check_dac=False)
        assert shown.returncode == 0 and "``" not in shown.stdout, (name, shown.stdout)
        for action in (sub._actions if sub else []):
            if not isinstance(action, argparse._SubParsersAction):
                assert action.help, f"beamtrawl {name} {action.option_strings or action.dest}: no help text"


def sub_commands(commands):
    for name, sub in commands.items():
        for action in sub._actions:
            if isinstance(action, argparse._SubParsersAction):
                yield from ((f"{name} {n}", s) for n, s in action.choices.items())


def test_numbers_in_the_summary_are_written_as_on_the_live_line():
    from beamtrawl.pipeline.report import build_report, plural, summary

    report = build_report({"accepted": 25719, "new": 25719, "read": 1, "written": 25719}, [], report_path="r.json")
    report.update(documents_in_index=25719, timings={"total_s": 1.0})
    text = summary(report)
    assert "discovered 25,719: 25,719 documents accepted" in text and "index holds 25,719" in text
    assert "read 1 document, wrote 25,719" in text
    assert plural(1, "start URL") == "1 start URL" and plural(2, "start URL") == "2 start URLs"


def test_progress_is_a_bar_with_the_share_the_slowest_stage_and_the_time_left():
    from beamtrawl.pipeline.progress import Rates, line, to_prepare

    finding = {"found": 4219, "compared": 0, "queued": 0, "prepared": 0, "written": 0}
    assert line(finding, 35.0, {"found": 120.0}) == "finding documents: found 4,219 · 120/s · 0:00:35"
    sums = {"found": 4219, "compared": 2000, "queued": 1000, "prepared": 1004, "written": 800}
    assert to_prepare(sums) == (2110, False)  # half of those compared are to prepare: about half of all found
    text = line(sums, 250.0, {"prepared": 12.0, "written": 8.0})
    assert text == "█████░░░░░ 48% · 1,004/~2,110 prepared · 800 written · 8.0/s writing · 2:43 left"  # (2110-800)/8
    assert len(text) <= 80  # one line of a terminal
    done = {**sums, "compared": 4219, "queued": 2110}
    assert line(done, 250.0) == "█████░░░░░ 48% · 1,004/2,110 prepared · 800 written · 0:04:10"  # no rate: no guess

    rates = Rates()
    rates.add(0.0, sums)
    rates.add(10.0, {**sums, "prepared": 1124, "written": 800})
    assert rates.of() == {"prepared": 12.0}  # writing did not move: not an active stage


def test_a_log_gets_a_progress_line_a_minute_not_every_few_seconds(tmp_path, monkeypatch, capsys):
    from beamtrawl.pipeline import progress
    from beamtrawl.transforms.progress import PROGRESS_DIR_ENV, Progress

    monkeypatch.setattr(progress, "LOG_INTERVAL_S", 2.0)  # a minute is long for a test; the rule is the same
    with progress.LiveProgress("lines") as live:
        monkeypatch.setenv(PROGRESS_DIR_ENV, live.folder)
        found = Progress("documents found")
        for _ in range(5):
            found.add(100)
            found.flush()
            time.sleep(1.0)
    lines = capsys.readouterr().err.strip().splitlines()
    assert 1 <= len(lines) <= 3, lines  # sampled every second, printed every LOG_INTERVAL_S
    assert all(line.startswith("finding documents: found ") for line in lines), lines


def test_explain_says_why_a_document_is_or_is_not_in_the_index_and_who_may_see_it(tmp_path, make_config):
    root = tmp_path / "docs"
    for name in ("plain.txt", "hr/salaries.txt", "drafts/d.txt", "a/b/c/deep.txt", "locked/secret.txt"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("walrus " + name)
    (root / "link.txt").symlink_to(root / "plain.txt")
    (root / "locked").chmod(0o000)
    try:
        config = make_config(root, blacklist=[{"regex": ".*/\\.git/.*"}, {"regex": ".*/drafts/.*"}], max_depth=2,
                             max_failed_ratio=1.0,
                             access_control=[{"url_rules": [{"prefix": str(root / "hr"), "groups": ["hr"]}]}])
        before = beamtrawl("explain", str(root / "plain.txt"), "--config", str(config))
        assert before.returncode == 2 and "no index here yet; run beamtrawl crawl first" in before.stderr
        crawled = beamtrawl("crawl", str(config), "--direct_num_workers=1")
        assert crawled.returncode == 1, crawled.stderr  # the locked folder could not be listed

        def explain(name: str) -> str:
            done = beamtrawl("explain", str(root / name), "--config", str(config))
            assert done.returncode == 0, done.stderr
            return done.stdout

        plain = explain("plain.txt")
        assert f"in the index {tmp_path / 'index.sqlite'} since " in plain and f"found under {root.as_uri()}" in plain
        assert f"accepted by whitelist[0] (prefix {root.as_uri()})" in plain
        assert "unchanged since it was indexed" in plain and "last preparation by text: prepared completely" in plain
        assert ", the current configuration's" in plain and "public: every searcher sees it" in plain
        assert "visible to members of hr" in explain("hr/salaries.txt")
        drafts = explain("drafts/d.txt")
        assert "not in the index" in drafts and "declined by blacklist[1] (regex .*/drafts/.*)" in drafts
        assert "3 levels below its start URL, max_depth is 2: declined, too deep" in explain("a/b/c/deep.txt")
        assert "a symbolic link: skipped, not followed" in explain("link.txt")
        locked = explain("locked/secret.txt")
        assert f"(of {(root / 'locked').as_uri()}): cannot list folder" in locked  # what the crawl recorded

        (root / "plain.txt").write_text("walrus, longer now")
        assert "changed since it was indexed: the next crawl prepares it again" in explain("plain.txt")
        assert "found by no start URL" in beamtrawl("explain", "/etc/passwd", "--config", str(config)).stdout
    finally:
        (root / "locked").chmod(0o755)


def test_the_crawls_explain_reads_are_kept_bounded(tmp_path, monkeypatch):
    from beamtrawl.pipeline import history

    monkeypatch.setattr(history, "MAX_LINES", 3)
    for n in range(history.KEPT_CRAWLS + 2):
        lines = [{"url": f"file:///x/{n}/{i}", "stage": "prepare", "reason": "r", "kind": "failed"} for i in range(9)]
        history.keep({"finished_at": f"2026-01-0{n + 1}T00:00:00+00:00", "exit_code": 1, "problems": lines},
                     str(tmp_path))
    kept = history.crawls(str(tmp_path))
    assert len(kept) == history.KEPT_CRAWLS and kept[0]["finished_at"].startswith("2026-01-07")
    assert all(len(crawl["lines"]) == 3 for crawl in kept)


def test_explain_asks_a_web_pages_robots_txt_as_the_crawl_does(tmp_path, make_config):
    from tests.servers.website import Website, html

    site = Website()
    site.start()
    try:
        site.put("/robots.txt", "User-agent: *\nDisallow: /private/\n", content_type="text/plain")
        site.put("/", html("Home", "walrus", ("/private/p.html",)))
        site.put("/private/p.html", html("Private", "walrus"))
        config = make_config(tmp_path, start=[{"url": site.base + "/"}], whitelist=[{"prefix": site.base + "/"}],
                             http={"delay": 0})
        assert beamtrawl("crawl", str(config), "--direct_num_workers=1").returncode == 0
        private = beamtrawl("explain", site.base + "/private/p.html", "--config", str(config))
        assert private.returncode == 0, private.stderr
        assert "not in the index" in private.stdout
        assert f"declined: robots.txt of {site.base} disallows it" in private.stdout
        home = beamtrawl("explain", site.base + "/", "--config", str(config)).stdout
        assert "in the index" in home and f"robots.txt of {site.base} allows it" in home
    finally:
        site.stop()
