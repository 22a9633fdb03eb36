"""The command as a CI job and a person at a terminal meet it: ``--set``, ``--report``, the summary line,
``init``, ``--version`` and ``--help``."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from beamtrawl.pipeline.config import ConfigError, load_config

from tests.conftest import beamtrawl

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "corpus"


def test_set_overrides_keys_and_is_validated_like_the_file(tmp_path, make_config, monkeypatch):
    config = make_config(tmp_path)
    monkeypatch.setenv("BT_INDEX_DIR", "/srv/indexes")
    assert load_config(str(config), overrides=["index.path=${BT_INDEX_DIR}/a.sqlite"]).index.path == \
        "/srv/indexes/a.sqlite"  # ${ENV} in a value works as in the file
    loaded = load_config(str(config), overrides=["index.path=other.sqlite", "max_depth=3",
                                                  "blacklist[0].regex=.*\\.bak", "http.user_agent=Bot 1.0"])
    assert loaded.index.path == str(tmp_path / "other.sqlite") and loaded.max_depth == 3
    assert loaded.blacklist[0].regex.pattern == ".*\\.bak" and loaded.section("http").user_agent == "Bot 1.0"
    for option, message in [
        ("index.pathx=3", "--set index.pathx=3: index.pathx: unknown key"),
        ("max_failed_ratio=7", "--set max_failed_ratio=7: max_failed_ratio: must be a number from 0 to 1"),
        ("blacklist[0].regex=(", "--set blacklist[0].regex=(: blacklist[0].regex:"),
        ("blacklist[5].regex=a", "--set blacklist[5].regex=a: blacklist has no item [5]"),
        ("index.path.x=1", "--set index.path.x=1: index.path is not a mapping"),
        ("max_depth", "--set max_depth: expected KEY.PATH=VALUE"),
        ("max_depth=[1", "--set max_depth=[1: the value is not YAML"),
        ("x" * 5000 + "=1", "…: unknown key"),
    ]:
        with pytest.raises(ConfigError) as err:
            load_config(str(config), overrides=[option])
        assert message in str(err.value) and len(str(err.value)) < 1200, str(err.value)


def test_report_to_stdout_or_a_path_and_a_summary_line_last(tmp_path, make_config):
    corpus = tmp_path / "corpus"
    shutil.copytree(EXAMPLES, corpus)
    config = make_config(corpus)
    done = beamtrawl("crawl", str(config), "--set", f"index.path={tmp_path / 'ci.sqlite'}", "--report", "-",
                     "--direct_num_workers=2")
    report = json.loads(done.stdout)  # standard output holds the report alone
    assert done.returncode in (0, 1) and report["counts"]["written"] >= 30
    last = done.stderr.strip().splitlines()[-1]
    fields = dict(f.split("=", 1) for f in last.split()[1:])
    assert last.startswith("beamtrawl-summary ") and fields["exit"] == str(done.returncode)
    assert fields["written"] == str(report["counts"]["written"]) and fields["fatal"] == "no"

    copy = tmp_path / "out" / "report.json"
    copy.parent.mkdir()
    again = beamtrawl("crawl", str(config), "--set", f"index.path={tmp_path / 'ci.sqlite'}", "--report",
                      str(copy), "--direct_num_workers=2")
    assert json.loads(copy.read_text())["counts"]["unchanged"] == report["counts"]["written"]
    assert again.stdout.strip().splitlines()[-1].startswith("beamtrawl-summary exit=")


def test_init_writes_a_configuration_that_crawls_as_written(tmp_path):
    corpus = tmp_path / "my docs"
    shutil.copytree(EXAMPLES, corpus)
    config = tmp_path / "crawl.yaml"
    done = beamtrawl("init", str(corpus), "--output", str(config), check_dac=False)
    assert done.returncode == 0, done.stderr
    assert yaml.safe_load(config.read_text())["start"][0]["url"] == corpus.as_uri()
    assert beamtrawl("init", str(corpus), "--output", str(config), check_dac=False).returncode == 2  # kept
    text = config.read_text()  # embeddings: written commented out, off, and valid once uncommented
    assert "# embeddings:" in text and '#   model: "wordllama"' in text and load_config(str(config)).embeddings is None
    section = "\n".join(line[2:] if line.startswith(("#   ", "# embeddings:")) else line
                         for line in text.splitlines())
    (tmp_path / "on.yaml").write_text(section)
    assert load_config(str(tmp_path / "on.yaml")).embeddings.model == "wordllama"
    crawled = beamtrawl("crawl", str(config), "--direct_num_workers=2")
    assert crawled.returncode in (0, 1), crawled.stderr
    hits = json.loads(beamtrawl("search", "sourdough", "--config", str(config), "--json",
                                check_dac=False).stdout)
    assert hits and all(h["url"].startswith(corpus.as_uri()) for h in hits)


def test_init_refuses_what_would_not_crawl_and_indexes_a_single_file(tmp_path):
    config = tmp_path / "crawl.yaml"
    for start, reason in (("ftp://example.org/pub", "not ftp://"), (str(tmp_path / "missing"), "no such file"),
                          ("smb://", "an smb:// start URL is"), ("x" * 5000, "File name too long")):  # were tracebacks
        done = beamtrawl("init", start, "--output", str(config), check_dac=False)
        assert done.returncode == 2 and reason in done.stderr and not config.exists()
    single = tmp_path / "notes.txt"
    single.write_text("a single file start")
    assert beamtrawl("init", str(single), "--output", str(config), check_dac=False).returncode == 0
    assert yaml.safe_load(config.read_text())["start"][0] == {"url": single.as_uri(), "parse": True, "index": True}


def test_init_for_web_smb_and_imap_takes_logins_from_the_environment(tmp_path, monkeypatch):
    config = tmp_path / "crawl.yaml"
    done = beamtrawl("init", "https://docs.example.org/en/index.html", "smb://files.lab/share",
                     "imaps://mail.lab/INBOX", "--output", str(config), check_dac=False)
    assert done.returncode == 0, done.stderr
    text = config.read_text()
    assert "${FILES_LAB_PASSWORD}" in text and "${MAIL_LAB_PASSWORD}" in text
    monkeypatch.setenv("FILES_LAB_PASSWORD", "x")
    monkeypatch.setenv("MAIL_LAB_PASSWORD", "y")
    loaded = load_config(str(config))
    assert loaded.whitelist[0].prefix == "https://docs.example.org/en/"


def test_version_and_help_say_what_a_person_needs():
    version = beamtrawl("--version", check_dac=False).stdout
    assert "beamtrawl" in version and "Apache Beam 2." in version
    crawl_help = beamtrawl("crawl", "--help", check_dac=False).stdout
    assert "configuration reference" in crawl_help and "--set" in crawl_help and "exit codes" in crawl_help
    search_help = beamtrawl("search", "--help", check_dac=False).stdout
    assert "query syntax" in search_help and '"a phrase"' in search_help


@pytest.mark.parametrize("limit", ["-1", "0", "10001", "99999999999999999999", "ten"])
def test_search_limit_is_a_whole_number_from_1_to_10000(tmp_path, make_config, limit):
    done = beamtrawl("search", "x", "--config", str(make_config(tmp_path)), "--limit", limit, check_dac=False)
    assert done.returncode == 2 and "--limit" in done.stderr and "Python int" not in done.stderr


@pytest.mark.parametrize("query, message", [(" ".join(["x*"] * 20), "too many prefix terms"),
                                            (" OR ".join(["a*"] * 500), "too long")])
def test_search_refuses_a_query_beyond_the_bounds_in_one_line(tmp_path, make_config, query, message):
    done = beamtrawl("search", query, "--config", str(make_config(tmp_path)), check_dac=False, timeout=30)
    assert done.returncode == 2 and message in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_dry_run_reaches_index_and_start_urls_and_writes_nothing(tmp_path, make_config):
    corpus = tmp_path / "corpus"
    shutil.copytree(EXAMPLES, corpus)
    config = make_config(corpus)
    before = sorted(p.name for p in tmp_path.iterdir())
    done = beamtrawl("crawl", "--dry-run", str(config))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "will be created" in done.stdout and f"start {corpus.as_uri()} (followed): reachable" in done.stdout
    assert "guards: no deletes if more than 20% of documents fail" in done.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no index, report or work folder

    gone = beamtrawl("crawl", "--dry-run", str(config), "--set", f"start[0].url={tmp_path / 'gone'}",
                     "--set", f"whitelist[0].prefix={tmp_path.as_uri()}")
    assert gone.returncode == 1 and "gone (followed): unavailable: No such file or directory" in gone.stdout
    nowhere = beamtrawl("crawl", "--dry-run", str(config), "--set", "index.path=/proc/beamtrawl/i.sqlite")
    assert nowhere.returncode == 2 and "cannot be created in /proc" in nowhere.stdout
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    refused = beamtrawl("crawl", "--dry-run", str(config), "--report", str(locked / "r.json"),
                        "--set", f"work_dir={locked / 'work'}")
    assert refused.returncode == 2, refused.stdout
    assert "report copy" in refused.stdout and "work folder" in refused.stdout and "Permission denied" in refused.stdout


def test_a_mistyped_option_is_refused_not_passed_to_beam(tmp_path, make_config):
    config = make_config(tmp_path)
    for typo, meant in (("--dryrun", "--dry-run"), ("--sett", "--set"), ("--quite", "--quiet")):
        done = beamtrawl("crawl", str(config), typo)
        assert done.returncode == 2 and f"unknown option {typo} (did you mean {meant}?)" in done.stderr
    assert not (tmp_path / "index.sqlite").exists()  # nothing was crawled


def test_progress_counts_add_up_across_workers(tmp_path, monkeypatch):
    from beamtrawl.pipeline.progress import line, totals
    from beamtrawl.transforms.progress import PROGRESS_DIR_ENV, Progress

    monkeypatch.setenv(PROGRESS_DIR_ENV, str(tmp_path))
    for what, n in [("documents found", 7), ("web pages found", 3), ("documents prepared (text)", 5),
                    ("documents prepared (pdf)", 2), ("documents written", 6)]:
        Progress(what).add(n)
    (tmp_path / "half.json").write_text('["documents wri')  # a reader may meet anything: ignored
    (tmp_path / "torn.json").write_text('["documents written", 1999, 2000]')  # a write caught half done: ignored
    assert totals(str(tmp_path)) == {"found": 10, "compared": 0, "queued": 0, "prepared": 7, "written": 6}
    assert line(totals(str(tmp_path)), 3.0, {"found": 3.4}) == "finding documents: found 10 · 3/s · 0:00:03"
    assert line(dict.fromkeys(("found", "compared", "queued", "prepared", "written"), 0), 3725.0) == "crawling · 1:02:05"


def test_progress_ends_at_the_real_count(tmp_path, monkeypatch):
    """Counts that came within the interval reach the display when the bundle ends (it stopped short)."""
    from beamtrawl.pipeline.progress import totals
    from beamtrawl.transforms.progress import PROGRESS_DIR_ENV, Progress

    monkeypatch.setenv(PROGRESS_DIR_ENV, str(tmp_path))
    progress = Progress("documents written")
    for _ in range(1000):
        progress.add()
    assert totals(str(tmp_path))["written"] < 1000  # the file is written every half second only
    progress.flush()
    assert totals(str(tmp_path))["written"] == 1000


def test_a_terminal_sees_live_progress_and_quiet_sees_only_the_summary(tmp_path, make_config):
    corpus = tmp_path / "corpus"
    shutil.copytree(EXAMPLES, corpus)
    config = make_config(corpus)
    outputs = {}
    for name, extra in (("live", ""), ("quiet", " --quiet")):
        typescript = tmp_path / f"{name}.out"
        command = f"{sys.executable} -m beamtrawl.pipeline.cli crawl {config} --direct_num_workers=2{extra}"
        subprocess.run(["script", "-qec", command, str(typescript)], env={**os.environ, "TERM": "xterm"},
                       cwd=ROOT, capture_output=True, timeout=600, check=True)
        outputs[name] = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", typescript.read_text(errors="replace"))
    assert re.search(r"finding documents: found \d+.* · 0:00:\d\d|\d+% · \d+/~?\d+ prepared · \d+ written",
                     outputs["live"])
    assert "crawling 1 start URL into" in outputs["live"]
    assert "found " not in outputs["quiet"].split("discovered")[0] and "crawling" not in outputs["quiet"]
    assert "beamtrawl-summary exit=0" in outputs["quiet"]


def test_dry_run_logs_in_to_a_mailbox_and_says_which_start_url_failed(tmp_path, make_config, monkeypatch):
    from tests.servers.dovecot import running_dovecot

    with running_dovecot({"crawler": "right-secret"}) as server:
        start = server.url("imap")
        for password, code in (("right-secret", 0), ("wrong-secret", 1)):
            monkeypatch.setenv("BT_DRY_PASSWORD", password)
            config = make_config(tmp_path, start=[{"url": start}, {"url": "http://127.0.0.1:9/"}],
                                 whitelist=[{"prefix": start}, {"prefix": "http://127.0.0.1:9/"}],
                                 credentials=[{"url": start, "username": "crawler",
                                               "password": "${BT_DRY_PASSWORD}"}],
                                 imap={"ca_file": str(server.ca_file)})
            done = beamtrawl("crawl", "--dry-run", str(config))
            lines = dict(line.split(": ", 1) for line in done.stdout.splitlines() if line.startswith("start "))
            assert done.returncode == 1, done.stdout + done.stderr  # the web start URL never answers
            said = lines[f"start {start} (followed, indexed)"]
            assert said == "reachable" if code == 0 else "login" in said.lower() or "auth" in said.lower(), said
            assert "refused" in lines["start http://127.0.0.1:9/ (followed, indexed)"]
            assert password not in done.stdout + done.stderr
