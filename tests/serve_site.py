"""A crawled corpus served by a real ``beamtrawl serve`` on loopback, for the web tests (test_serve.py,
test_serve_browser.py): public reports, an ``hr`` folder only the ``hr`` group may see, and files
with hostile names and titles.

    with served(site) as base: ...   # base = "http://127.0.0.1:PORT"
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import os
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import yaml

from tests.conftest import beamtrawl, beamtrawl_command
from tests.servers.jvm import free_ports

REPORTS = 27  # public documents holding "numbat": two pages of 20 and more
PASSWORD = "correct horse battery staple"
HOSTILE_NAME = '<img src=x onerror=alert(1)> "q" numbat.txt'
HOSTILE_TITLE = "<script>alert('title')</script> numbat"


@dataclass
class Site:
    root: Path
    config: Path
    users: Path


def make_site(folder: Path) -> Site:
    """Write the corpus, crawl it into an embedded index, and add the users alice (hr) and bob (none)."""
    root = folder / "docs"
    (root / "reports").mkdir(parents=True)
    (root / "hr").mkdir()
    for n in range(REPORTS):
        (root / "reports" / f"report-{n:02d}.txt").write_text(
            f"Numbat survey {n}: {n + 1} numbats counted near the creek.\n" + "walk " * n, encoding="utf-8")
        os.utime(root / "reports" / f"report-{n:02d}.txt", (1_700_000_000 + n * 86_400,) * 2)
    (root / "hr" / "salaries.txt").write_text("Salary review: the numbat keepers get a raise.\n", encoding="utf-8")
    (root / HOSTILE_NAME).write_text("A numbat with a hostile file name.\n", encoding="utf-8")
    (root / "hostile.html").write_text(f"<html><head><title>{HOSTILE_TITLE}</title></head><body><p>numbat "
                                       f"&lt;b&gt;bold&lt;/b&gt; <script>alert(2)</script></p></body></html>",
                                       encoding="utf-8")
    _pdf(root / "numbat-guide.pdf")
    for other in (root / "hr" / "salaries.txt", root / HOSTILE_NAME, root / "hostile.html", root / "numbat-guide.pdf"):
        os.utime(other, (1_600_000_000,) * 2)  # older than the reports: the newest hit is the last report
    url = f"file://{root}"
    config = folder / "crawl.yaml"
    config.write_text(yaml.safe_dump({
        "start": [{"url": url}], "index": {"path": str(folder / "index.sqlite")},
        "access_control": [{"url_rules": [{"prefix": f"{url}/hr", "groups": ["hr"]}]}]}), encoding="utf-8")
    done = beamtrawl("crawl", str(config), "--direct_num_workers=1", "-q", check_dac=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return Site(root, config, add_users(folder))


def add_users(folder: Path) -> Path:
    """The users file ``folder/users`` with alice (groups hr and staff) and bob (none), both with PASSWORD."""
    users = folder / "users"
    for name, groups in (("alice", "hr,staff"), ("bob", "")):
        added = subprocess.run(beamtrawl_command("user", "add", name, "--groups", groups, "--users", str(users),
                                                 check_dac=False), input=PASSWORD + "\n", text=True,
                               capture_output=True, check=False)
        assert added.returncode == 0, added.stderr
    return users


def _pdf(path: Path) -> None:
    from reportlab.pdfgen import canvas

    pdf = canvas.Canvas(str(path))
    pdf.setTitle("Numbat field guide")
    pdf.drawString(72, 720, "The numbat field guide: termites, burrows and banded backs.")
    pdf.save()


@contextlib.contextmanager
def served(site: Site, *options: str):
    """``beamtrawl serve`` on a free loopback port until the block ends; yields its base URL."""
    (port,) = free_ports(1)
    log = open(site.config.parent / f"serve-{port}.log", "w+", encoding="utf-8")  # noqa: SIM115 - read on failure
    server = subprocess.Popen(beamtrawl_command("serve", "--config", str(site.config), "--port", str(port),
                                                "--users", str(site.users), *options, check_dac=False),
                              stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if get(base + "/health")[0] == 200:
                    break
            except OSError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                log.seek(0)
                raise AssertionError(f"beamtrawl serve did not start: {log.read()[-2000:]}")
            time.sleep(0.2)
        yield base
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


def get(url: str, user: str | None = None, password: str = PASSWORD, headers: dict | None = None):
    """(status, headers, body bytes) of a GET, redirects not followed; errors are answers too."""
    request = urllib.request.Request(url, headers=headers or {})
    if user:
        token = base64.b64encode(f"{user}:{password}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    try:
        with _OPENER.open(request, timeout=60) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as err:
        return err.code, err.headers, err.read()


def api(base: str, query: str, user: str | None = None, **params) -> dict:
    status, _, body = get(f"{base}/api/search?" + urllib.parse.urlencode({"q": query, **params}), user)
    assert status == 200, body
    return json.loads(body)


def sign_in(base: str, user: str, password: str, source: str, timeout: float = 120) -> tuple[int, float, str]:
    """(status, seconds, Retry-After) of one sign-in to the served site from the loopback address ``source``
    (tests/test_signin.py and bench/signin_bench.py)."""
    host, port = urllib.parse.urlsplit(base).netloc.split(":")
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    started = time.monotonic()
    connection = http.client.HTTPConnection(host, int(port), timeout=timeout, source_address=(source, 0))
    try:
        connection.request("GET", "/api/search?q=numbat", headers={"Authorization": f"Basic {token}"})
        response = connection.getresponse()
        response.read()
        return response.status, time.monotonic() - started, response.headers.get("Retry-After", "")
    finally:
        connection.close()
