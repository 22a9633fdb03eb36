"""Document ids never change: an id is a hash of the normalised URL, so a new spelling would re-index every document
(issue 29 moved each scheme's default ports, local paths and containment into its source). tests/data/url_ids.json
holds, for every URL :func:`urls` makes, its id and its containment verdicts computed once by transforms/urls.py
at commit becb73a (before the move)::

    git show becb73a:transforms/urls.py > /tmp/urls_becb73a.py
    .venv/bin/python -m tests.test_url_ids /tmp/urls_becb73a.py > tests/data/url_ids.json
"""

import contextlib
import importlib.util
import itertools
import json
import random
import re
import sys
from pathlib import Path

from beamtrawl.transforms.urls import doc_id, is_under, normalize_url

TABLE = Path(__file__).parent / "data" / "url_ids.json"
CLEANERS = (re.compile(r"[;&]?jsessionid=[0-9A-Za-z]*"), re.compile(r"&?utm_[a-z]+=[^&]*"))

_SCHEMES = ("http", "https", "HTTP", "smb", "SMB", "imap", "imaps", "IMAPS", "s3", "file", "FILE", "ftp", "memo")
_HOSTS = ("", "host", "Host.Example.COM", "user:pw@host", "h", "[::1]", "[FE80::1]", "10.0.0.1")
_PORTS = ("", ":0", ":21", ":80", ":143", ":443", ":445", ":993", ":8080", ":080")
_PATHS = ("", "/", "/a/b", "/a/./b/../c/", "/a%2fb/%7Euser/", "/r%C3%A9sum%C3%A9.pdf", "/my docs/x.txt", "/%ff%FE",
          "//double//slash", "/INBOX;UIDVALIDITY=7/;UID=12", "/Folder;UIDVALIDITY=1", "/share/dir/.", "/a/..",
          "/x?y=1&&z=2#frag", "/p;jsessionid=AB12?q=1&utm_source=x&k=v", "/%41%42%2F", "/ä ö/ü")


def urls() -> list[str]:
    """Every scheme with hosts, ports and paths, plus plain paths and oddities: a few thousand URLs, the same each
    time."""
    made = [f"{s}://{h}{p}{path}" for s, h, p, path in itertools.product(_SCHEMES, _HOSTS, _PORTS, _PATHS)]
    chosen = random.Random(29).sample(made, 2500)
    odd = ["/srv/docs", "/srv/docs/", "/srv/my docs/a.txt", "/srv/r\u00e9sum\u00e9", "/", "//srv//x/", "file:/srv/x",
           "FILE:/srv/x", "file:srv", "file", "docs/a.txt", "File:///SRV/X", " http://h/ ", "smb:/share/x", "imap:INBOX",
           "mailto:a@b", "http://h:99999/", "http://[::1/", "http://h:abc/", "s3://bucket", "s3://Bucket/Key%2Fx",
           "imaps://u@h:993/INBOX;UIDVALIDITY=5/;UID=3", "smb://h:445/share/a%20b/", "https://h:443", "http://h:80?q"]
    return chosen + odd


def _pairs(table: list[str]) -> list[tuple[str, str]]:
    """(url, root) pairs for containment: each URL against prefixes of itself and a neighbour's root."""
    pairs = []
    for url, other in zip(table, table[1:] + table[:1]):
        for cut in (len(url), len(url) - 1, url.rfind("/"), url.rfind(";"), url.rfind("?")):
            if cut > 0:
                pairs.append((url, url[:cut]))
        pairs.append((url, other))
    return pairs


def _compute(module) -> dict:
    """What ``module`` (a transforms/urls.py) says of :func:`urls`, in their order: each one's id (its first 16 hex
    digits, or "ValueError"), the id with cleaners where it differs, and the containment verdicts of :func:`_pairs`
    as a string of 0 and 1."""
    ids, cleaned, normals = [], {}, []
    with contextlib.chdir("/"):  # a relative path (``smb:/x`` without //, ``imap:INBOX``) is the same file each time
        for i, url in enumerate(urls()):
            try:
                normal = module.normalize_url(url)
            except ValueError:
                ids.append("ValueError")
                continue
            normals.append(normal)
            ids.append(module.doc_id(normal)[:16])
            clean = module.doc_id(module.normalize_url(url, CLEANERS))[:16]
            if clean != ids[-1]:
                cleaned[str(i)] = clean
    under = "".join("1" if module.is_under(u, r) else "0" for u, r in _pairs(normals))
    return {"ids": ids, "cleaned": cleaned, "under": under}


def test_every_url_keeps_its_id():
    expected, now = json.loads(TABLE.read_text(encoding="utf-8")), _compute(sys.modules[normalize_url.__module__])
    table = urls()
    assert len(expected["ids"]) == len(table) > 2000 and {u.split(":")[0].lower() for u in table} >= {
        s.lower() for s in _SCHEMES}
    changed = [(url, then, id_now) for url, then, id_now in zip(table, expected["ids"], now["ids"]) if then != id_now]
    assert changed == []
    assert len(expected["cleaned"]) > 100 and now["cleaned"] == expected["cleaned"]
    assert doc_id(normalize_url("smb://h:445/a")) == doc_id("smb://h/a")


def test_every_containment_verdict_is_kept():
    expected, now = json.loads(TABLE.read_text(encoding="utf-8"))["under"], _compute(sys.modules[is_under.__module__])
    assert expected.count("1") > 1000 and expected.count("0") > 1000
    assert now["under"] == expected


if __name__ == "__main__":  # the table from another urls.py: python -m tests.test_url_ids <path to urls.py>
    spec = importlib.util.spec_from_file_location("urls_then", sys.argv[1])
    then = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(then)
    json.dump(_compute(then), sys.stdout, indent=0)
