"""The CI job files of docs/ci/ run as written: their check and crawl commands, on a good tree, a tree with
an unreadable folder and an unusable index, with what each exit code does to the job.

``.venv/bin/`` in them is this suite's environment; the install step is the README's (test_front_door).
"""

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

from tests.conftest import DROP_DAC

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "corpus"
BIN = str(Path(sys.executable).parent) + "/"


def _shell(script: str, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    """A step as the CI service runs it (bash -e), as a user without root's permission overrides."""
    script = script.replace(".venv/bin/", BIN)
    command = ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script]
    if os.geteuid() == 0:
        command = DROP_DAC + command
    return subprocess.run(command, cwd=cwd, env={**os.environ, **env}, capture_output=True, text=True,
                          timeout=600, check=False)


def _expand(value: str, secrets: dict) -> str:
    return re.sub(r"\$\{\{\s*secrets\.(\w+)\s*\}\}", lambda m: secrets[m.group(1)], value)


@pytest.fixture
def workspace(tmp_path):
    """A checkout as the job sees it: crawls/docs.yaml over a copy of the example corpus, behind a login."""
    corpus = tmp_path / "corpus"
    shutil.copytree(EXAMPLES, corpus)
    (tmp_path / "crawls").mkdir()
    (tmp_path / "crawls" / "docs.yaml").write_text(yaml.safe_dump({
        "start": [{"url": corpus.as_uri()}], "index": {"path": "../index/docs.sqlite"},
        "credentials": [{"url": "smb://files.example.org/", "username": "crawler",
                         "password": "${DOCS_PASSWORD}"}]}))
    return tmp_path


def _github_steps(workspace: Path, secrets: dict) -> tuple[dict, list[dict]]:
    job = yaml.safe_load((ROOT / "docs/ci/github-nightly-crawl.yml").read_text())["jobs"]["crawl"]
    env = {k: _expand(str(v), secrets) for k, v in job["env"].items()}
    env["INDEX_DIR"] = str(workspace / "index")
    steps = [s for s in job["steps"] if "run" in s and s.get("name") != "Install"]
    assert [s["name"] for s in steps] == ["Check", "Crawl"]
    return env, steps


def test_github_workflow_passes_warns_and_fails_as_documented(workspace):
    env, (check, crawl) = _github_steps(workspace, {"DOCS_PASSWORD": "not-in-any-output"})
    done = [_shell(step["run"], workspace, env) for step in (check, crawl)]
    assert [d.returncode for d in done] == [0, 0], done[1].stderr
    assert "will be created" in done[0].stdout
    report = json.loads((workspace / "crawl-report.json").read_text())
    assert report["exit_code"] == 0 and report["counts"]["written"] >= 30
    assert "not-in-any-output" not in done[1].stdout + done[1].stderr + json.dumps(report)

    (workspace / "corpus" / "lab").chmod(0)  # exit 1: a folder failed, the rest indexed: a warning
    try:
        warned = _shell(crawl["run"], workspace, env)
    finally:
        (workspace / "corpus" / "lab").chmod(0o755)
    assert warned.returncode == 0 and "::warning::" in warned.stdout
    assert json.loads((workspace / "crawl-report.json").read_text())["exit_code"] == 1

    env["INDEX_DIR"] = "/proc/beamtrawl"  # exit 2: the job fails at its check, and at the crawl
    assert _shell(check["run"], workspace, env).returncode == 2
    failed = _shell(crawl["run"], workspace, env)
    assert failed.returncode == 2 and "::error::" in failed.stdout


def test_gitlab_job_crawls_into_opensearch_and_maps_exit_codes(workspace, opensearch, fresh_index):
    job = yaml.safe_load((ROOT / "docs/ci/gitlab-nightly-crawl.yml").read_text())["nightly-crawl"]
    assert job["allow_failure"] == {"exit_codes": [1]}
    docs = yaml.safe_load((workspace / "crawls" / "docs.yaml").read_text())
    docs["index"] = {"url": "http://placeholder:9200", "name": fresh_index(), "username": "crawler",
                     "password": "${OPENSEARCH_PASSWORD}"}
    (workspace / "crawls" / "docs-opensearch.yaml").write_text(yaml.safe_dump(docs))
    env = {"OPENSEARCH_URL": opensearch, "OPENSEARCH_PASSWORD": "masked", "DOCS_PASSWORD": "x"}
    codes = [_shell(line, workspace, env).returncode for line in job["script"]]
    assert codes == [0, 0]
    report = json.loads((workspace / "crawl-report.json").read_text())
    assert report["counts"]["written"] >= 30 and report["documents_in_index"] == report["counts"]["written"]
    env["OPENSEARCH_URL"] = "http://127.0.0.1:9"  # nothing listens: the job fails before any work
    assert [_shell(line, workspace, env).returncode for line in job["script"]] == [2, 2]
