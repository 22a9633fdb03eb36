"""Access control and auxiliary fields: controllers on real files, the configuration, and searches
that try to reach forbidden documents — on the embedded index and on a real OpenSearch node."""

from __future__ import annotations

import grp
import json
import os
import pwd
import re
import shutil
import sqlite3
import subprocess
import tempfile
from pathlib import Path

import apache_beam as beam
import pytest
import yaml
from apache_beam.testing.test_pipeline import TestPipeline as BeamTestPipeline
from apache_beam.testing.util import assert_that, equal_to
from beamtrawl.pipeline.config import ConfigError, parse_config
from beamtrawl.pipeline.crawl import preparation_fingerprint
from beamtrawl.transforms.batches import by_folder, unpack
from beamtrawl.transforms.enrich.access import Access, PosixOwnership, UrlRules, access_of
from beamtrawl.transforms.enrich.assign import AssignGroups
from beamtrawl.transforms.enrich.auxfields import RESERVED, AuxFieldSpec, aux_values
from beamtrawl.transforms.index import EmbeddedIndex, IndexUnavailable
from beamtrawl.transforms.index.opensearch import OpenSearchIndex
from beamtrawl.transforms.index.query import parse_query
from beamtrawl.transforms.index.sqlite import SCHEMA_VERSION
from beamtrawl.transforms.preparators import BUILTIN, Prepared
from beamtrawl.transforms.prepare import PrepareOptions, make_document
from beamtrawl.transforms.records import EVERYONE, Entry, IndexDoc, RawDocument, use_row_coders
from beamtrawl.transforms.urls import doc_id

from tests.conftest import beamtrawl
from tests.servers.samba import unix_user

BASE = {"start": [{"url": "/srv/acl"}], "index": {"path": "i.sqlite"}}


def _config(**settings):
    return parse_config({**BASE, **settings}, "crawl.yaml")


def _error(**settings) -> str:
    with pytest.raises(ConfigError) as err:
        _config(**settings)
    assert "\n" not in str(err.value)
    return str(err.value)


def _entry(url: str, groups=()) -> Entry:
    return Entry(doc_id(url), url, "file:///srv/acl", 1, 10, 0, "", None, "", [], "", "", "", "", list(groups))


# -- auxiliary fields ------------------------------------------------------------------------------

def test_aux_fields_follow_regains_semantics():
    config = _config(auxiliary_fields=[
        {"name": "project", "regex": "/Projects/([^/]*)/", "source": "path"},
        {"name": "doctype", "regex": "/hr/", "value": "Confidential", "lower_case": False},
        {"name": "site", "regex": "^https?://([^/]*)/", "case_sensitive": True},
        {"name": "topic", "regex": "/topics/([^/]*)/", "tokenize": True, "store": False},
    ])
    names = [f.name for f in config.auxiliary_fields]
    assert names == ["extension", "location", "project", "doctype", "site", "topic"]  # regain's defaults first
    values = {a.name: a for a in aux_values(config.auxiliary_fields,
                                            "file:///srv/projects/Apollo%20X/hr/topics/Sea%20Ice/Notes.PDF")}
    assert values["project"].value == "apollo x"  # from the decoded path, case-insensitive, lower-cased
    assert values["doctype"].value == "Confidential"  # a fixed value, kept as written
    assert values["extension"].value == "pdf"
    assert (values["location"].store, values["location"].tokenize) == (False, True)
    assert "site" not in values  # no match, no field
    site = {a.name: a.value for a in aux_values(config.auxiliary_fields, "https://Example.org/x")}
    assert site["site"] == "example.org"
    assert AuxFieldSpec("e", re.compile(r"\.([^./]*)$")).compute("file:///a.d/Makefile") is None


def test_aux_field_names_cannot_shadow_standard_fields():
    assert RESERVED == set(IndexDoc._fields) - {"extension"}
    assert _error(auxiliary_fields=[{"name": "groups", "regex": "."}]) == (
        "crawl.yaml: auxiliary_fields[0].name: 'groups' is a standard field of every document")
    assert _error(auxiliary_fields=[{"name": "x", "regex": "(a"}]).startswith(
        "crawl.yaml: auxiliary_fields[0].regex: missing ), unterminated subpattern")
    assert _error(auxiliary_fields=[{"name": "x", "regex": "(a)", "group": 2}]) == (
        "crawl.yaml: auxiliary_fields[0].group: the regex has 1 groups, so there is no group 2")
    assert _error(auxiliary_fields=[{"name": "x", "regex": "a", "value": "v", "group": 0}]) == (
        "crawl.yaml: auxiliary_fields[0]: needs either 'group' (a regex group) or 'value' (a fixed value), "
        "not both")
    assert _error(auxiliary_fields=[{"name": "x", "regex": "a", "source": "title"}]) == (
        "crawl.yaml: auxiliary_fields[0].source: must be url or path, got 'title'")
    assert _error(auxiliary_fields=[{"name": "Project", "regex": "a"}]).startswith(
        "crawl.yaml: auxiliary_fields[0].name: must be lower case letters")


# -- controllers -----------------------------------------------------------------------------------

def test_url_rules_first_match(tmp_path):
    config = _config(access_control=[{"url_rules": [
        {"prefix": "/srv/acl/hr", "groups": ["hr"]},
        {"regex": ".*/public/.*", "groups": []},
        {"prefix": "/srv/acl", "groups": ["staff"]},
    ]}])
    [rules] = config.access_control
    assert isinstance(rules, UrlRules)
    assert rules.groups(_entry("file:///srv/acl/hr/public/x.txt")) == ["hr"]
    assert rules.groups(_entry("file:///srv/acl/team/public/x.txt")) == []
    assert rules.groups(_entry("file:///srv/acl/team/x.txt")) == ["staff"]
    assert rules.groups(_entry("file:///srv/other/x.txt")) is None
    assert rules.groups(_entry("file:///srv/acl/hrx/a.txt")) == ["staff"]  # prefixes match whole segments



# -- the posix controller against what each user can really open -----------------------------------

@pytest.fixture
def open_tree():
    """A folder every user may reach (pytest's own tmp folders are private to their owner)."""
    folder = Path(tempfile.mkdtemp(prefix="beamtrawl-posix-", dir="/tmp"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _setfacl(path: Path, *entries: str) -> None:
    subprocess.run(["setfacl", "-m", ",".join(entries), str(path)], check=True)


def _visible(access: Access, principals: set[str]) -> bool:
    """What the index lets a searcher holding ``principals`` see (the rule of both targets)."""
    allowed = not access.groups or bool(principals & set(access.groups))
    return allowed and not (principals | {EVERYONE}) & set(access.denied)


def _opens(user: str, path: Path) -> bool:
    done = subprocess.run(["runuser", "-u", user, "--", "cat", str(path)], capture_output=True, check=False)
    return done.returncode == 0


POSIX_USERS = {"btpalice": ("btpstaff",), "btpbob": (), "btpcarol": ("btpstaff", "btpother")}


def test_posix_controller_sees_folders_groups_and_acls_as_the_kernel_does(open_tree):
    """Every folder from / down must let the user search it, the file must let it read; POSIX ACLs
    (named users and groups, the mask) count. Each answer is compared with what ``runuser`` as that
    user can open."""
    uids = {user: unix_user(user, groups) for user, groups in POSIX_USERS.items()}
    staff = grp.getgrnam("btpstaff").gr_gid
    tree = {  # path → (mode, owner, group, ACL entries); folders end with "/"
        "pub/": (0o755, 0, 0, ()), "pub/world.txt": (0o644, 0, 0, ()),
        "pub/owner-cannot.txt": (0o044, uids["btpalice"], 0, ()),  # others may, its owner may not
        "pub/staff-cannot.txt": (0o604, 0, staff, ()),  # the group class forbids what other allows
        "home/": (0o755, 0, 0, ()), "home/alice/": (0o700, uids["btpalice"], 0, ()),
        "home/alice/cv.txt": (0o644, uids["btpalice"], 0, ()),  # 0644 in a private home
        "staff/": (0o750, 0, staff, ()), "staff/plan.txt": (0o644, 0, 0, ()),
        "acl/": (0o700, 0, 0, ("u:btpbob:x",)), "acl/bob.txt": (0o644, 0, 0, ()),
        "acl-group/": (0o700, 0, 0, ("g:btpother:rx",)), "acl-group/other.txt": (0o640, 0, 0, ("g:btpother:r",)),
        "acl-file.txt": (0o600, 0, 0, ("g:btpstaff:r",)),
        "masked.txt": (0o600, 0, 0, ("u:btpbob:r", "m::-")),  # the mask takes bob's entry away
        "named-deny.txt": (0o644, 0, 0, ("u:btpbob:-",)),  # bob is named with no rights: other does not help
        "two-groups.txt": (0o644, 0, 0, ("g:btpstaff:r", "g:btpother:-")),  # carol reads through staff
    }
    for name, (mode, uid, gid, acl) in tree.items():
        path = open_tree / name
        if name.endswith("/"):
            path.mkdir()
        else:
            path.write_text("x", encoding="utf-8")
        os.chown(path, uid, gid)
        path.chmod(mode)
        if acl:
            _setfacl(path, *acl)
    posix = PosixOwnership()
    mismatches = []
    for name in tree:
        if name.endswith("/"):
            continue
        access = posix.groups(_entry(f"file://{open_tree}/{name}"))
        for user in (*POSIX_USERS, "nobody"):
            principals = {f"user:{user}", *(grp.getgrgid(g).gr_name for g in os.getgrouplist(
                user, pwd.getpwnam(user).pw_gid))}
            if _visible(access, principals) != _opens(user, open_tree / name):
                mismatches.append((name, user, access))
    assert mismatches == []
    assert posix.groups(_entry(f"file://{open_tree}/pub/world.txt")) == Access([], [])
    assert posix.groups(_entry(f"file://{open_tree}/home/alice/cv.txt")) == Access(["user:btpalice", "user:root"], [])
    assert set(posix.groups(_entry(f"file://{open_tree}/staff/plan.txt")).groups) >= {"btpstaff", "user:btpcarol"}
    assert posix.groups(_entry(f"file://{open_tree}/pub/owner-cannot.txt")).denied == ["user:btpalice"]
    assert "btpstaff" in posix.groups(_entry(f"file://{open_tree}/pub/staff-cannot.txt")).denied
    assert PosixOwnership(world_readable_group="everyone").groups(
        _entry(f"file://{open_tree}/pub/world.txt")) == Access(["everyone"], [])
    assert PosixOwnership(rename={"user:root": "admins"}).groups(
        _entry(f"file://{open_tree}/masked.txt")) == Access(["admins"], [])
    assert posix.groups(_entry("https://example.org/a")) is None


def test_first_answer_wins_and_the_sources_groups_stay_without_one():
    hr = UrlRules([(_config(access_control=[{"url_rules": [{"prefix": "/srv/acl/hr", "groups": ["hr"]}]}])
                    .access_control[0].rules[0][0], ["hr"])])
    public = UrlRules([(hr.rules[0][0], [])])
    assert access_of([hr, public], _entry("file:///srv/acl/hr/a.txt", ["from-acl"])) == Access(["hr"], [])
    assert access_of([public, hr], _entry("file:///srv/acl/hr/a.txt", ["from-acl"])) == Access([], [])
    assert access_of([hr], _entry("file:///srv/acl/other.txt", ["smb-group"])) == Access(["smb-group"], [])
    assert access_of([], _entry("file:///srv/acl/other.txt", ["b", "a", "b"])) == Access(["a", "b"], [])

    class Bad:
        def groups(self, entry):
            return ["two words"]

    with pytest.raises(ValueError, match="without spaces"):
        access_of([Bad()], _entry("file:///srv/acl/a.txt"))


def test_access_control_configuration_errors():
    assert _error(access_control=[{"url_rules": [{"prefix": "/srv/acl", "groups": ["a b"]}]}]) == (
        "crawl.yaml: access_control[0].url_rules[0].groups: a group name must be a non-empty word without "
        "spaces, got 'a b'")
    assert _error(access_control=[{"posix": {}, "url_rules": []}]) == (
        "crawl.yaml: access_control[0]: needs exactly one of 'url_rules', 'posix' or 'class'")
    assert _error(access_control=[{"posix": {"owner": True}}]).startswith(
        "crawl.yaml: access_control[0].posix.owner: unknown key")
    assert _error(access_control=[{"class": "nosuchmodule:Controller"}]).startswith(
        "crawl.yaml: access_control[0].class: cannot import nosuchmodule")
    assert _error(access_control=[{"url_rules": [{"regex": "(", "groups": []}]}]).startswith(
        "crawl.yaml: access_control[0].url_rules[0].regex: missing ), unterminated subpattern")


# -- search-time enforcement, on both index targets ------------------------------------------------

AUX = [{"name": "area", "regex": "/acl/([^/]+)/"}, {"name": "doctype", "regex": "/hr/", "value": "secret"}]
DOCS = {  # url → (groups, title, content)
    "file:///srv/acl/public/readme.txt": ([], "Readme", "zebra public notes about meadows"),
    "file:///srv/acl/hr/salaries.txt": (["hr"], "Salaries", "zebra salaries confidential payroll"),
    "file:///srv/acl/board/minutes.txt": (["board", "hr-lead"], "Minutes", "zebra board minutes merger"),
}


def _documents() -> list[IndexDoc]:
    fields = _config(auxiliary_fields=AUX).auxiliary_fields
    options = PrepareOptions((), "fp", 2**20, 1000, aux_fields=fields)
    return [make_document(RawDocument(_entry(url, groups), "text/plain", content.encode(), ""),
                          Prepared(title=title, content=content), options)
            for url, (groups, title, content) in DOCS.items()]


@pytest.fixture(params=["embedded", "opensearch"])
def filled_target(request, tmp_path):
    if request.param == "embedded":
        target = EmbeddedIndex(str(tmp_path / "index.sqlite"))
    else:
        target = OpenSearchIndex(request.getfixturevalue("opensearch"), request.getfixturevalue("fresh_index")())
    target.prepare()
    target.snapshot_splits()
    assert target.upsert(_documents()) == []
    target.finish(succeeded=True)
    yield target
    target.close()


def _names(target, text: str, groups=()) -> list[str]:
    query = parse_query(text, fields=["extension", "location", "area", "doctype"], groups=groups)
    return sorted(hit.url.rsplit("/", 1)[-1] for hit in target.search(query, 100))


FORBIDDEN_FOR_THE_PUBLIC = [
    "salaries", "payroll", "salar*", "merg*", '"salaries confidential"', '"board minutes"', "minutes",
    "area:hr", "area:board", "doctype:secret", "doctype:SECRET", "location:hr", "location:board",
    "path:/srv/acl/hr", "url:file:///srv/acl/hr", "url:file:///srv/acl/board/minutes.txt",
    "mimetype:text/plain -meadows", "extension:txt -public", "zebra -meadows", "-readme extension:txt",
    "zebra -public -notes", "area:hr zebra", "title:salaries", "groups:hr",
]


@pytest.mark.parametrize("text", FORBIDDEN_FOR_THE_PUBLIC)
def test_a_public_search_never_reaches_a_document_with_groups(filled_target, text):
    assert _names(filled_target, text) == [], text
    assert _names(filled_target, text, groups=["other", "HR", "hr' OR 1=1 --"]) == [], text


def test_groups_open_exactly_their_documents_with_snippets_and_stored_aux_fields(filled_target):
    assert _names(filled_target, "zebra") == ["readme.txt"]
    assert _names(filled_target, "zebra", ["hr"]) == ["readme.txt", "salaries.txt"]
    assert _names(filled_target, "zebra", ["hr-lead"]) == ["minutes.txt", "readme.txt"]
    assert _names(filled_target, "zebra", ["hr", "board"]) == ["minutes.txt", "readme.txt", "salaries.txt"]
    assert _names(filled_target, "area:hr", ["hr"]) == ["salaries.txt"]
    assert _names(filled_target, "doctype:Secret", ["hr"]) == ["salaries.txt"]
    assert _names(filled_target, "location:acl -location:public", ["board"]) == ["minutes.txt"]
    assert _names(filled_target, "extension:txt") == ["readme.txt"]
    assert _names(filled_target, "area:public") == ["readme.txt"]
    [hit] = filled_target.search(parse_query("payroll", groups=["hr"]), 10)
    assert "payroll" in hit.snippet
    assert hit.extra == {"extension": "txt", "area": "hr", "doctype": "secret"}  # location is not stored
    for hit in filled_target.search(parse_query("zebra"), 10):
        assert not re.search("salar|payroll|board|merger", hit.snippet + hit.title), hit


def test_denies_win_over_groups_and_hidden_documents_reach_no_one(filled_target):
    """A searcher holding any denied group does not see the document, whatever group lets it in: a
    user denied in a group that is allowed, and a group denied with a member allowed (issue 15, 5)."""
    denied = {"file:///srv/deny/user.txt": (["staff"], ["bob"]), "file:///srv/deny/group.txt": (["bob"], ["staff"]),
              "file:///srv/deny/hidden.txt": (["staff"], [])}
    docs = [make_document(RawDocument(_entry(url, groups)._replace(denied=no), "text/plain", b"kestrel", ""),
                          Prepared(title="Kestrel", content="kestrel nest"), PrepareOptions((), "fp", 2**20, 1000))
            for url, (groups, no) in denied.items()]
    assert filled_target.upsert(docs) == []
    filled_target.set_access([(doc_id("file:///srv/deny/hidden.txt"), ["staff"], [EVERYONE])])
    if isinstance(filled_target, OpenSearchIndex):
        filled_target.client.indices.refresh(index=filled_target.name)  # every partition behind the alias
    assert _names(filled_target, "kestrel", ["staff"]) == ["user.txt"]
    assert _names(filled_target, "kestrel", ["bob"]) == ["group.txt"]
    assert _names(filled_target, "kestrel", ["bob", "staff"]) == []
    assert _names(filled_target, "kestrel", ["staff", "*"]) == ["user.txt"]  # naming "*" opens nothing hidden
    assert _names(filled_target, "kestrel") == []
    splits = filled_target.snapshot_splits()
    snapshot = {s.url: list(s.denied) for split in splits for s in filled_target.read_snapshot(split)}
    filled_target.finish(succeeded=True)
    assert snapshot["file:///srv/deny/hidden.txt"] == [EVERYONE]
    assert snapshot["file:///srv/deny/user.txt"] == ["bob"]
    assert snapshot["file:///srv/acl/hr/salaries.txt"] == []


# -- end to end on the embedded index: controllers in the crawl, a change of groups re-indexes ------

def _search(config: Path, text: str, groups: str = "") -> list[str]:
    done = beamtrawl("search", text, "--config", str(config), "--json", "--limit", "100",
                     *(["--groups", groups] if groups else []), check_dac=False)
    assert done.returncode == 0, done.stderr
    return sorted(h["url"].rsplit("/", 1)[-1] for h in json.loads(done.stdout))


def test_crawl_assigns_groups_and_a_rule_change_reindexes_only_what_changed(tmp_path, open_tree, make_config,
                                                                           crawl):
    root = open_tree / "acl"
    files = {"public/readme.txt": ("zebra readme", 0o644), "hr/salaries.txt": ("zebra salaries", 0o644),
             "private/diary.txt": ("zebra diary", 0o600), "team/plan.txt": ("zebra plan", 0o640)}
    for name, (text, mode) in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
        (root / name).chmod(mode)
    owner, group = pwd.getpwuid(os.getuid()).pw_name, grp.getgrgid(os.getgid()).gr_name
    rules = [{"prefix": str(root / "hr"), "groups": ["hr"]}]
    config = make_config(root, access_control=[{"url_rules": rules}, {"posix": {}}], auxiliary_fields=AUX)

    first = crawl(config)
    assert first.code == 0, first.stderr
    assert first.counts["new"] == 4
    assert _search(config, "zebra") == ["readme.txt"]
    assert _search(config, "zebra", "hr") == ["readme.txt", "salaries.txt"]
    assert _search(config, "zebra", f"user:{owner}") == ["diary.txt", "plan.txt", "readme.txt"]
    assert _search(config, "zebra", group) == ["plan.txt", "readme.txt"]
    assert _search(config, "area:hr") == [] and _search(config, "area:hr", "hr") == ["salaries.txt"]
    assert _search(config, "area:private", f"nobody,{group}") == []

    rules[0]["groups"] = ["hr", "finance"]
    settings = yaml.safe_load(config.read_text(encoding="utf-8"))
    settings["access_control"][0]["url_rules"] = rules
    config.write_text(yaml.safe_dump(settings), encoding="utf-8")
    second = crawl(config)
    assert second.code == 0, second.stderr
    assert (second.counts["changed"], second.counts["unchanged"], second.counts["written"]) == (1, 3, 1)
    assert _search(config, "zebra", "finance") == ["readme.txt", "salaries.txt"]


def test_url_rules_match_decoded_urls_and_a_rule_that_matched_nothing_is_a_warning(tmp_path, make_config, crawl):
    """Issue 15, item 3: ``{regex: ".*/résumés/.*", groups: [hr]}`` left résumés/r.txt public."""
    root = tmp_path / "docs"
    for name in ("résumés/r.txt", "my drafts/d.txt", "plain.txt"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("walrus " + name, encoding="utf-8")
    config = make_config(root, blacklist=[{"regex": ".*/my drafts/.*"}, {"regex": ".*/nothing here/.*"}],
                         access_control=[{"url_rules": [{"regex": ".*/résumés/.*", "groups": ["hr"]},
                                                        {"regex": ".*/no such folder/.*", "groups": ["x"]}]}])
    run = crawl(config)
    assert run.code == 0, run.stderr
    assert _search(config, "walrus") == ["plain.txt"]
    assert _search(config, "walrus", "hr") == ["plain.txt", "r.txt"]
    assert run.report["warnings"] == [
        "blacklist[1] (regex .*/nothing here/.*) matched no URL in this crawl",
        "access_control[0].url_rules[1] (regex .*/no such folder/.*) matched no URL in this crawl"]
    assert "warning: blacklist[1] (regex .*/nothing here/.*) matched no URL in this crawl" in run.stdout + run.stderr


def test_narrowed_access_applies_at_once_even_when_the_re_read_fails(tmp_path, make_config, crawl):
    """Issue 15, item 4: a document whose new access excludes a group is hidden from it at once, not
    left with its old groups while (or because) reading it again fails."""
    root = tmp_path / "docs"
    root.mkdir()
    (root / "pay.txt").write_text("narwhal payroll", encoding="utf-8")
    rules = [{"prefix": str(root), "groups": []}]
    config = make_config(root, access_control=[{"url_rules": rules}])
    assert crawl(config).code == 0
    assert _search(config, "narwhal") == ["pay.txt"]
    rules[0]["groups"] = ["hr"]
    settings = yaml.safe_load(config.read_text(encoding="utf-8"))
    settings["access_control"][0]["url_rules"] = rules
    config.write_text(yaml.safe_dump(settings), encoding="utf-8")
    (root / "pay.txt").chmod(0o000)  # the crawler (without DAC override) can no longer read it
    run = crawl(config)
    assert run.code == 1 and run.counts["changed"] == 1 and run.counts["failed"] == 1
    assert _search(config, "narwhal") == []
    assert _search(config, "narwhal", "hr") == ["pay.txt"]


# -- the embedded index's schema change, and what re-prepares documents -----------------------------

def test_a_version_1_index_is_migrated_by_a_crawl_and_refused_by_search_until_then(tmp_path):
    path = str(tmp_path / "old.sqlite")
    EmbeddedIndex(path).prepare()
    db = sqlite3.connect(path)
    db.execute("DROP TABLE aux")  # what version 1 looked like
    db.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    with pytest.raises(IndexUnavailable, match=f"index schema version 1, this beamtrawl searches version {SCHEMA_VERSION}; "
                                               "run beamtrawl crawl once to upgrade it"):
        EmbeddedIndex(path).check()
    index = EmbeddedIndex(path)
    index.prepare()  # what a crawl does first
    index.check()
    assert index.upsert(_documents()) == []
    assert _names(index, "area:hr", ["hr"]) == ["salaries.txt"]


def test_fingerprint_covers_aux_fields_and_document_changing_plugins_only():
    def fingerprint(**settings):
        return preparation_fingerprint(BUILTIN, _config(**settings))

    plain = fingerprint()
    assert fingerprint(auxiliary_fields=AUX) != plain
    assert fingerprint(plugins=[{"plugin": "filesize_filter", "params": {"min_bytes": 1}}]) == plain
    assert fingerprint(access_control=[{"posix": {}}]) == plain  # groups are compared per document instead
    titled = fingerprint(plugins=[{"plugin": "link_text_title", "params": {"url_patterns": ["pdf$"]}}])
    assert titled != plain
    assert titled != fingerprint(plugins=[{"plugin": "link_text_title", "params": {"url_patterns": ["doc$"]}}])


class FailsOnSecrets:
    def groups(self, entry):
        if "secret" in entry.url:
            raise PermissionError("no access to the ACL")
        return ["staff"]


def test_a_controller_failure_is_reported_and_names_the_document_to_keep():
    """AssignGroups alone: the failing document is one report line and goes to the keep output (that the
    index then keeps its version is the crawl's part: test_isolation.py's failing access controller)."""
    use_row_coders()
    with BeamTestPipeline() as p:
        entries = p | beam.Create(by_folder([_entry("file:///srv/acl/a.txt"), _entry("file:///srv/acl/secret.txt")]))
        assigned, events, keep, _arrived = entries | AssignGroups([FailsOnSecrets()])
        assert_that(assigned | "Pairs" >> beam.FlatMap(lambda b: [(e.url, list(e.groups)) for e in unpack(b, Entry)]),
                    equal_to([("file:///srv/acl/a.txt", ["staff"])]), label="Assigned")
        assert_that(events | "Reasons" >> beam.Map(lambda e: (e.kind, e.url, e.stage, e.reason)), equal_to([
            ("failed", "file:///srv/acl/secret.txt", "access",
             "access failed: PermissionError: no access to the ACL")]), label="Events")
        assert_that(keep, equal_to(["file:///srv/acl/secret.txt"]), label="Keep")
