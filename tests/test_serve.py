"""``beamtrawl serve`` over HTTP: a real server on loopback over a crawled corpus (tests/serve_site.py).
What the page and API show, what each searcher may see (hits, totals, facets, documents), the users file,
the trusted proxy header, and the security rules (escaping, CSP, bounds, redirects, slowed failures)."""

from __future__ import annotations

import html
import json
import re
import subprocess
import time
import urllib.parse

import pytest
from beamtrawl.pipeline.serve.people import Doorkeeper, UsersError, add_user, password_matches, read_users
from beamtrawl.transforms.index import EmbeddedIndex
from beamtrawl.transforms.index.query import parse_query

from tests.conftest import beamtrawl, beamtrawl_command
from tests.serve_site import HOSTILE_NAME, HOSTILE_TITLE, PASSWORD, REPORTS, api, get, make_site, served


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    return make_site(tmp_path_factory.mktemp("serve"))


@pytest.fixture(scope="module")
def base(site):
    with served(site) as url:
        yield url


def _search_json(site, query: str, groups: str = "") -> list[dict]:
    done = beamtrawl("search", query, "--config", str(site.config), "--json", "--limit", "100", "--groups", groups,
                     check_dac=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


# -- the API --------------------------------------------------------------------------------------

def test_api_hits_have_the_fields_of_search_json(site, base):
    from_api = api(base, "survey", per_page=100)
    assert from_api["total"] == REPORTS
    assert from_api["hits"] == _search_json(site, "survey")
    assert set(from_api) == {"query", "mode", "like", "order", "page", "per_page", "total", "hits", "facets"}


def test_api_pages_and_orders(base):
    first, second = api(base, "survey"), api(base, "survey", page=2)
    assert (len(first["hits"]), len(second["hits"])) == (20, REPORTS - 20)
    assert not {h["url"] for h in first["hits"]} & {h["url"] for h in second["hits"]}
    newest = api(base, "survey", order="date", per_page=5)["hits"]
    dates = [h["last_modified"] for h in newest]
    assert dates == sorted(dates, reverse=True) and newest[0]["url"].endswith("report-26.txt")


def test_facets_count_the_matches_and_narrow_the_search(site, base):
    found = api(base, "numbat")
    facets = {name: {f["value"]: f["count"] for f in values} for name, values in found["facets"].items()}
    assert facets["extension"]["txt"] == REPORTS + 1 and facets["extension"]["pdf"] == 1
    assert facets["mimetype"]["application/pdf"] == 1
    reports = f"{site.root}/reports/"
    assert facets["path"][reports] == REPORTS
    narrowed = api(base, f"numbat path:{reports}")
    assert narrowed["total"] == REPORTS
    assert api(base, "numbat extension:pdf")["total"] == 1


def test_anonymous_searchers_see_public_documents_only(base):
    assert api(base, "salary")["total"] == 0
    anonymous = api(base, "numbat", per_page=100)
    assert all("/hr/" not in h["url"] for h in anonymous["hits"])
    assert all("/hr/" not in f["value"] for f in anonymous["facets"]["path"])
    signed_in = api(base, "numbat", user="alice", per_page=100)
    assert signed_in["total"] == anonymous["total"] + 1
    assert any("/hr/" in f["value"] for f in signed_in["facets"]["path"])
    assert api(base, "salary", user="alice")["total"] == 1
    assert api(base, "salary", user="bob")["total"] == 0  # signed in, but not in hr


def test_scores_do_not_depend_on_hidden_documents(site, base):
    """The hidden hr document holds 'raise'; an anonymous search for a public word scores as in an index
    without it: equal to the embedded index searched directly with no groups."""
    direct = EmbeddedIndex(str(site.config.parent / "index.sqlite"))
    expected = [(h.url, h.score) for h in direct.search(parse_query("numbat keepers OR survey"), 50)]
    assert [(h["url"], h["score"]) for h in api(base, "numbat keepers OR survey", per_page=50)["hits"]] == expected


# -- documents ------------------------------------------------------------------------------------

def test_documents_stream_from_their_source_with_type_and_name(site, base):
    [hit] = [h for h in api(base, "report-07")["hits"] if h["url"].endswith("/report-07.txt")]
    status, headers, body = get(f"{base}/document/{hit['id']}")
    assert status == 200
    assert body == (site.root / "reports" / "report-07.txt").read_bytes()
    assert headers["Content-Type"] == "text/plain"
    assert headers["Content-Disposition"].startswith('inline; filename="report-07.txt"')
    [pdf] = api(base, "extension:pdf")["hits"]
    status, headers, body = get(f"{base}/document/{pdf['id']}")
    assert (status, headers["Content-Type"], body[:5]) == (200, "application/pdf", b"%PDF-")


def test_documents_pass_the_same_access_check_as_the_search(base):
    [secret] = api(base, "salary", user="alice")["hits"]
    assert get(f"{base}/document/{secret['id']}")[0] == 404  # anonymous: as if it did not exist
    assert get(f"{base}/document/{secret['id']}", user="bob")[0] == 404
    status, _, body = get(f"{base}/document/{secret['id']}", user="alice")
    assert status == 200 and body.startswith(b"Salary review")


@pytest.mark.parametrize("path", ["/document/0123456789abcdef0123456789abcdef", "/document/..%2F..%2Fetc%2Fpasswd",
                                  "/document/file:%2F%2F%2Fetc%2Fpasswd", "/document/%2Fetc%2Fpasswd",
                                  "/document/../../etc/passwd"])
def test_only_ids_in_the_index_open_anything(base, path):
    status, _, body = get(base + path)
    assert status == 404 and b"root:" not in body


def test_html_documents_open_inline_in_a_sandbox_and_cannot_script_the_site(base):
    [page] = api(base, "extension:html")["hits"]
    status, headers, _ = get(f"{base}/document/{page['id']}")
    assert status == 200 and headers["Content-Disposition"].startswith("inline;")
    assert headers["Content-Type"] == "text/html"
    policy = [p.strip() for p in headers["Content-Security-Policy"].split(";")]
    assert "sandbox" in policy and "default-src 'none'" in policy  # no script runs, an origin of its own
    assert headers["X-Content-Type-Options"] == "nosniff"


def test_every_hit_has_a_text_view_behind_the_same_access_check(base):
    [secret] = api(base, "salary", user="alice")["hits"]
    assert get(f"{base}/text/{secret['id']}")[0] == 404  # anonymous: as if it did not exist
    assert get(f"{base}/text/{secret['id']}", user="bob")[0] == 404
    status, headers, body = get(f"{base}/text/{secret['id']}?q=raise", user="alice")
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert b"Salary review: the numbat keepers get a <mark>raise</mark>." in body
    [page] = api(base, "extension:html")["hits"]
    status, _, body = get(f"{base}/text/{page['id']}?q=numbat")
    text = body.decode()
    assert status == 200 and "<script>alert" not in text and "&lt;script&gt;alert(&#39;title&#39;)" in text
    assert "<mark>numbat</mark>" in text and "text/html" in text
    assert get(f"{base}/text/0123456789abcdef0123456789abcdef")[0] == 404


def test_hostile_file_names_get_a_safe_disposition(site, base):
    [hit] = api(base, "hostile file name")["hits"]
    status, headers, _ = get(f"{base}/document/{hit['id']}")
    disposition = headers["Content-Disposition"]
    assert status == 200 and "\n" not in disposition
    ascii_name = re.search(r'filename="([^"]*)"', disposition).group(1)
    assert set(ascii_name) <= set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._ -")
    assert urllib.parse.unquote(disposition.split("filename*=UTF-8''")[1]) == HOSTILE_NAME


# -- the page -------------------------------------------------------------------------------------

def test_hostile_titles_names_and_snippets_are_escaped_on_the_page(base):
    status, _headers, body = get(f"{base}/?q=numbat&per_page=100")
    page = body.decode()
    assert status == 200
    assert "<script" not in page and "<img" not in page and "onerror=alert(1)>" not in page
    assert HOSTILE_TITLE in html.unescape(page)  # shown as written, as text
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "<mark>numbat</mark>" in page.lower() or "<mark>Numbat</mark>" in page


HOSTILE_QUERIES = ['"><script>alert(1)</script>', "'><img src=x onerror=alert(1)>", "</title><svg onload=alert(1)>",
                   '" autofocus onfocus="alert(1)', "&lt;b&gt; &amp;"]


@pytest.mark.parametrize("payload", HOSTILE_QUERIES)
def test_hostile_queries_are_escaped_everywhere(base, payload):
    """Every page that echoes the query (hits with paging links, by date, no hits, a refused request) shows
    it as text in the search box and carries it intact in every link; the JSON API gives it back as sent.
    A refused request (too long a query, too many per page) does not echo it at all."""
    hits, none, long = f"{payload} numbat", f"{payload} wombatish", f"{payload} " + "x" * 1001
    for query, params, status in ((hits, {}, 200), (hits, {"per_page": "1"}, 200), (none, {}, 200),
                                  (hits, {"order": "date", "per_page": "1"}, 200),
                                  (hits, {"per_page": "101"}, 400), (long, {}, 400)):
        answer, _headers, body = get(f"{base}/?" + urllib.parse.urlencode({"q": query, **params}))
        page = body.decode()
        assert answer == status, (query, params)
        assert not re.search(r"<(script|img|svg|/title><)", page), (query, params)  # no tag of theirs
        boxes = [html.unescape(v) for v in re.findall(r'<input[^>]*name="q"[^>]*value="([^"]*)"', page)]
        assert boxes and all(value == (query if status == 200 else "") for value in boxes), (query, boxes)
        links = [html.unescape(h) for h in re.findall(r'href="([^"]*)"', page) if "q=" in h]
        linked = [urllib.parse.parse_qs(urllib.parse.urlsplit(link).query)["q"][0] for link in links]
        assert all(q == query or q.startswith(query + " ") for q in linked), linked  # facets add a filter
        assert links or params.get("per_page") != "1", "the paged answers have links to check"
    assert api(base, hits)["query"] == hits and api(base, none)["query"] == none


def test_the_page_has_a_strict_policy_and_no_script(base):
    _status, headers, body = get(f"{base}/?q=numbat")
    csp = headers["Content-Security-Policy"]
    assert "default-src 'none'" in csp and "script-src" not in csp and "frame-ancestors 'none'" in csp
    assert headers["X-Frame-Options"] == "DENY" and headers["Referrer-Policy"] == "no-referrer"
    assert b"<script" not in body and b" style=" not in body and b" on" + b"click" not in body


def test_page_states_a_person_understands(base):
    empty = get(f"{base}/?q=wombatish")
    assert empty[0] == 200 and b"No documents match" in empty[2]
    broken = get(f"{base}/?q=" + "x%2A+" * 9)
    assert broken[0] == 400 and b"too many prefix terms" in broken[2] and b'role="alert"' in broken[2]
    welcome = get(f"{base}/")
    assert welcome[0] == 200 and b'<label for="q">' in welcome[2]


def test_facet_links_narrow_and_paging_links_stay_on_the_site(base):
    page = get(f"{base}/?q=numbat")[2].decode()
    links = re.findall(r'href="([^"]*)"', page)
    assert any("extension%3Apdf" in link for link in links)
    assert 'rel="next" href="/?q=numbat&amp;page=2"' in page
    assert all(link.startswith(("/", "#")) and not link.startswith("//") for link in links), links  # all local


@pytest.mark.parametrize("params, message", [
    ({"q": "x" * 1001}, b"too long"), ({"q": "numbat", "per_page": "101"}, b"per_page"),
    ({"q": "numbat", "page": "0"}, b"page"), ({"q": "numbat", "page": "600"}, b"first 10,000 hits"),
    ({"q": "numbat", "order": "random"}, b"order"), ({"q": "numbat", "page": "1e9"}, b"page")])
def test_queries_and_pages_are_bounded(base, params, message):
    for path in ("/", "/api/search"):
        status, _, body = get(f"{base}{path}?" + urllib.parse.urlencode(params))
        assert status == 400 and message in body, (path, body[:300])


# -- who is searching -----------------------------------------------------------------------------

def test_wrong_passwords_are_refused_and_slowed(base):
    started = time.monotonic()
    status, headers, _ = get(f"{base}/?q=numbat", user="alice", password="wrong")
    assert status == 401 and headers["WWW-Authenticate"].startswith("Basic")
    assert time.monotonic() - started >= 0.9
    assert get(f"{base}/?q=numbat", user="mallory", password="x")[0] == 401  # no such user: the same answer


def test_sign_in_asks_and_returns_to_the_search_only(base):
    status, headers, _ = get(f"{base}/signin?q=numbat")
    assert status == 401 and "Basic" in headers["WWW-Authenticate"]
    status, headers, _ = get(f"{base}/signin?" + urllib.parse.urlencode({"q": "numbat", "next": "https://evil.example/"}),
                             user="alice")
    assert status == 303 and headers["Location"] == "/?q=numbat"
    page = get(f"{base}/?q=salary", user="alice")[2]
    assert b"Signed in as <strong>alice</strong>" in page and b"1 document" in page


def test_a_trusted_proxy_names_the_user(site):
    with served(site, "--trusted-header", "X-Remote-User", "--trusted-proxy", "127.0.0.1") as url:
        assert api(url, "salary")["total"] == 0
        _, _, body = get(f"{url}/api/search?q=salary", headers={"X-Remote-User": "alice"})
        assert json.loads(body)["total"] == 1
    with served(site, "--trusted-header", "X-Remote-User", "--trusted-proxy", "192.0.2.1") as url:
        _status, _, body = get(f"{url}/api/search?q=salary", headers={"X-Remote-User": "alice"})
        assert json.loads(body)["total"] == 0  # not from the proxy: the header means nothing


def test_health(base):
    status, _, body = get(f"{base}/health")
    assert (status, json.loads(body)) == (200, {"status": "ok"})


def test_users_file_keeps_salted_hashes(tmp_path):
    users = tmp_path / "users"
    assert add_user(str(users), "carol", "pw one", ["a", "b"]) is True
    assert add_user(str(users), "dave", "pw one", []) is True
    text = users.read_text()
    assert "pw one" not in text and (users.stat().st_mode & 0o777) == 0o600
    found = read_users(str(users))
    assert found["carol"].groups == ("a", "b") and found["carol"].hash != found["dave"].hash  # salted
    assert password_matches("pw one", found["carol"].hash) and not password_matches("pw two", found["carol"].hash)
    assert add_user(str(users), "carol", "pw two", ["c"]) is False
    assert read_users(str(users))["carol"].groups == ("c",)
    for name in ("bad name", "a:b", ""):
        with pytest.raises(UsersError):
            add_user(str(users), name, "x", [])
    with pytest.raises(UsersError, match="--trusted-proxy"):
        Doorkeeper(str(users), "X-User", ())


def test_user_add_command(tmp_path):
    users = tmp_path / "users"
    bad = beamtrawl("user", "add", "a b", "--users", str(users), check_dac=False)
    assert bad.returncode == 2 and "a user or group name" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
    unreadable = tmp_path / "broken"
    unreadable.write_text("not a users file\n")
    done = beamtrawl("serve", "--config", "nowhere.yaml", "--users", str(unreadable), check_dac=False)
    assert done.returncode == 2


def test_serve_refuses_a_broken_users_file(site, tmp_path):
    broken = tmp_path / "users"
    broken.write_text("just one field\n")
    done = beamtrawl("serve", "--config", str(site.config), "--users", str(broken), "--port", "1", check_dac=False)
    assert done.returncode == 2 and f"{broken}:1: not a line of a users file" in done.stderr


def test_password_lines_from_standard_input(tmp_path):
    import subprocess

    from tests.conftest import beamtrawl_command
    users = tmp_path / "users"
    done = subprocess.run(beamtrawl_command("user", "add", "erin", "--users", str(users), check_dac=False),
                          input=PASSWORD + "\n", text=True, capture_output=True, check=False)
    assert done.returncode == 0 and "added erin" in done.stdout
    assert password_matches(PASSWORD, read_users(str(users))["erin"].hash)


# -- OpenSearch -----------------------------------------------------------------------------------

def test_opensearch_serves_the_same_pages(site, opensearch, fresh_index, tmp_path):
    """The same corpus crawled into OpenSearch: every page, total, facet and document answer equals the
    embedded index's, for an anonymous searcher and for one in hr."""
    import yaml
    from beamtrawl.transforms.index.opensearch import OpenSearchIndex

    config = yaml.safe_load(site.config.read_text())
    config["index"] = {"url": opensearch, "name": fresh_index()}
    os_config = tmp_path / "os.yaml"
    os_config.write_text(yaml.safe_dump(config))
    done = beamtrawl("crawl", str(os_config), "--direct_num_workers=1", "-q", check_dac=False)
    assert done.returncode == 0, done.stdout + done.stderr
    embedded, remote = EmbeddedIndex(str(site.config.parent / "index.sqlite")), OpenSearchIndex(opensearch, fresh_index())
    for groups in ((), ("hr",)):
        for text in ("numbat", "numbat extension:txt", "salary OR survey", "survey -walk", "path:" + str(site.root)):
            for order in ("relevance", "date"):
                query = parse_query(text, (), groups)
                mine, theirs = embedded.search_page(query, 7, 3, order), remote.search_page(query, 7, 3, order)
                assert (mine.total, mine.facets) == (theirs.total, theirs.facets), (text, groups)
                if order == "date":
                    assert [h.id for h in mine.hits] == [h.id for h in theirs.hits], (text, groups)
                else:
                    assert len(mine.hits) == len(theirs.hits)
    [secret] = embedded.search(parse_query("salary", (), ["hr"]), 5)
    assert remote.document(secret.id, ["hr"]).url == secret.url
    assert remote.document(secret.id, []) is None and remote.document("0" * 32, ["hr"]) is None
    with served(site.__class__(site.root, os_config, site.users)) as url:
        assert api(url, "salary")["total"] == 0
        assert api(url, "salary", user="alice")["hits"][0]["id"] == secret.id
        status, _, body = get(f"{url}/document/{secret.id}", user="alice")
        assert status == 200 and body.startswith(b"Salary review")


def test_sign_out_refuses_the_kept_credentials_without_asking_again(base):
    status, _, body = get(f"{base}/?q=salary", user="alice")
    assert status == 200 and b'href="/signout">Sign out</a>' in body
    status, headers, body = get(f"{base}/signout", user="alice")
    assert status == 401 and "WWW-Authenticate" not in headers  # the browser drops them and shows the page
    assert b"You are signed out" in body and b"Signed in as" not in body


def test_the_request_log_has_a_line_per_request_and_never_the_password(site, base):
    get(f"{base}/?q=numbat", user="alice")
    get(f"{base}/?q=numbat", user="alice", password="a wrong password")
    get(f"{base}/api/search?q=numbat")
    port = base.rsplit(":", 1)[1]
    log = site.config.parent / f"serve-{port}.log"
    for _ in range(100):  # a request's line is written once its answer is sent: the last may come after it
        lines = log.read_text(encoding="utf-8").splitlines()
        requests = [line.split() for line in lines if " GET " in line]
        if any(r[2:6] == ["-", "GET", "/api/search", "200"] for r in requests):
            break
        time.sleep(0.1)
    assert any(r[2:6] == ["alice", "GET", "/", "200"] for r in requests), lines[-5:]
    assert any(r[2:6] == ["-", "GET", "/", "401"] for r in requests)
    assert any(r[2:6] == ["-", "GET", "/api/search", "200"] for r in requests)
    assert all(r[6].isdigit() and r[7].endswith("ms") and r[0][:4].isdigit() for r in requests)
    text = "\n".join(lines)
    assert PASSWORD not in text and "a wrong password" not in text and "numbat" not in text


def test_user_list_and_remove(tmp_path):
    users = tmp_path / "users"
    for name, groups in (("carol", "hr,staff"), ("dave", "")):
        done = subprocess.run(beamtrawl_command("user", "add", name, "--groups", groups, "--users", str(users),
                                                check_dac=False), input="pw\n", text=True, capture_output=True,
                              check=False)
        assert done.returncode == 0, done.stderr
    assert "dave has no groups: signed in, they see public documents only" in done.stderr
    listed = beamtrawl("user", "list", "--users", str(users), check_dac=False)
    assert listed.stdout.splitlines() == ["carol\thr,staff", "dave\t(no groups: public documents only)"]
    removed = beamtrawl("user", "remove", "dave", "--users", str(users), check_dac=False)
    assert (removed.returncode, removed.stdout.strip()) == (0, f"removed dave from {users}")
    assert list(read_users(str(users))) == ["carol"]
    again = beamtrawl("user", "remove", "dave", "--users", str(users), check_dac=False)
    assert again.returncode == 2 and len(again.stderr.strip().splitlines()) == 1 and "no user dave" in again.stderr


def test_types_have_readable_names_and_folders_wrap_at_slashes(base):
    status, _, body = get(f"{base}/?q=numbat")
    text = body.decode()
    assert status == 200
    assert 'title="text/plain">plain text document</a>' in text  # the Type facet: a name, the type on hover
    assert '<span class="type" title="application/pdf">PDF document</span>' in text
    folder = re.search(r'<h2 id="facet-path">Folder</h2>\s*<ul[^>]*>\s*<li><a [^>]*>([^<]*(?:<wbr>[^<]*)*)</a>',
                       text)
    assert folder and "/<wbr>" in folder.group(1), text[text.find("facet-path"):][:400]
