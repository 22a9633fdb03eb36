"""Range and date queries (issue 28, item 11): ``modified:`` and ``size:`` find the same documents on the
embedded index and on a real OpenSearch node, and the search page's "modified" facet counts the last week,
month and year and what is older alike on both."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from beamtrawl.transforms.index.base import date_buckets
from beamtrawl.transforms.index.query import QueryError, parse_query, range_of
from beamtrawl.transforms.preparators import Prepared
from beamtrawl.transforms.prepare import PrepareOptions, make_document
from beamtrawl.transforms.records import Entry, RawDocument
from beamtrawl.transforms.urls import doc_id

from tests.test_ranking import new_target  # noqa: F401  (the fixture: both targets)

NOW = datetime.now(UTC)
DOCS = {  # name → (modified, size in bytes)
    "this-week.txt": (NOW - timedelta(days=2), 100),
    "this-month.txt": (NOW - timedelta(days=20), 5_000),
    "this-year.txt": (NOW - timedelta(days=200), 2 * 1024**2),
    "march-2024.txt": (datetime(2024, 3, 15, 12, tzinfo=UTC), 1024**2),
    "new-year-2024.txt": (datetime(2024, 1, 1, 0, 0, tzinfo=UTC), 1024**2 + 1),
    "old.txt": (datetime(2019, 6, 1, tzinfo=UTC), 10),
}


def _doc(name: str, modified: datetime, size: int):
    url = f"file:///srv/ranges/{name}"
    entry = Entry(doc_id(url), url, "file:///srv/ranges", 1, size, int(modified.timestamp() * 1e9), "", None, "",
                  [], "", "", "", "")
    text = f"report {name}"  # contents of their own: copies of one content would be one hit
    return make_document(RawDocument(entry, "text/plain", text.encode(), ""), Prepared(title="", content=text),
                         PrepareOptions((), "fp", 2**30, 1000))


@pytest.fixture
def target(new_target):  # noqa: F811
    made = new_target()
    made.snapshot_splits()
    assert made.upsert([_doc(name, *value) for name, value in DOCS.items()]) == []
    made.finish(succeeded=True)
    return made


QUERIES = {
    "modified:>2024-01-01": {"this-week.txt", "this-month.txt", "this-year.txt", "march-2024.txt"},
    "modified:>=2024-01-01 modified:<2024-04": {"march-2024.txt", "new-year-2024.txt"},
    "modified:2024-03": {"march-2024.txt"},
    "modified:2024-01-01": {"new-year-2024.txt"},
    "modified:2019..2024-01": {"old.txt", "new-year-2024.txt"},
    "report modified:<2020": {"old.txt"},
    "size:>1MB": {"this-year.txt", "new-year-2024.txt"},
    "size:>=1MB -modified:2024": {"this-year.txt"},
    "size:1MB": {"march-2024.txt"},
    "size:<1KB": {"this-week.txt", "old.txt"},
    "size:1KB..10KB report": {"this-month.txt"},
    "-size:>10": {"old.txt"},
}


@pytest.mark.parametrize("text", QUERIES)
def test_ranges_find_the_same_documents_on_both_targets(target, text):
    found = {hit.url.rsplit("/", 1)[1] for hit in target.search(parse_query(text), 100)}
    assert found == QUERIES[text]


def test_the_modified_facet_counts_last_week_month_year_and_older(target):
    page = target.search_page(parse_query("report"), 10)
    labels = {value: label for label, value, _low, _high in date_buckets()}
    assert [(labels[value], n) for value, n in page.facets["modified"]] == [
        ("last week", 1), ("last month", 2), ("last year", 3), ("older", 3)]
    # each value narrows a search to what it counted
    for value, n in page.facets["modified"]:
        assert target.search_page(parse_query(f"report modified:{value}"), 10).total == n


@pytest.mark.parametrize(("value", "message"), [
    ("modified:yesterday", "modified: 'yesterday' is not a date as 2024, 2024-03 or 2024-03-05 (UTC)"),
    ("modified:2024-13", "modified: '2024-13' is not a date"),
    ("size:big", "size: 'big' is not a size as 2000, 10KB, 1.5MB or 2GB (powers of 1,024)"),
    ("size:>", "size: '>' is not a size"),
])
def test_a_range_that_is_no_date_or_size_is_one_line(value, message):
    with pytest.raises(QueryError, match="^" + message.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        parse_query(value)


def test_range_bounds():
    day = 24 * 3600 * 10**9
    start = int(datetime(2024, 3, 1, tzinfo=UTC).timestamp()) * 10**9
    assert range_of("modified", "2024-03") == (start, start + 31 * day)
    assert range_of("modified", ">2024-02-29") == (start, None)
    assert range_of("modified", "<=2024-12") == (None, int(datetime(2025, 1, 1, tzinfo=UTC).timestamp()) * 10**9)
    assert range_of("size", ">1MB") == (1024**2 + 1, None)
    assert range_of("size", "1.5GB") == (3 * 1024**3 // 2, 3 * 1024**3 // 2 + 1)


# -- copies of one content are one hit (issue 28, item 12) ---------------------------------------------------
def _copy(path: str, groups=()):
    url = f"file:///srv/share/{path}"
    text = "Quarterly figures of the numbat sanctuary, final version."
    entry = Entry(doc_id(url), url, "file:///srv/share", 1, len(text), 0, "", None, "", [], "", "", "", "",
                  list(groups))
    return make_document(RawDocument(entry, "application/pdf", text.encode(), ""), Prepared(title="", content=text),
                         PrepareOptions((), "fp", 2**20, 1000))


def test_copies_are_one_hit_listing_only_the_places_the_searcher_may_see(new_target):  # noqa: F811
    target = new_target()
    target.snapshot_splits()
    other = _doc("unrelated.txt", NOW, 10)
    assert target.upsert([_copy("a/figures.pdf"), _copy("b/copy of figures.pdf"), _copy("hr/figures.pdf", ["hr"]),
                          other]) == []
    target.finish(succeeded=True)
    [public] = target.search(parse_query("numbat sanctuary"), 10)
    assert {public.url, *public.locations} == {"file:///srv/share/a/figures.pdf",
                                               "file:///srv/share/b/copy of figures.pdf"}
    [hr] = target.search(parse_query("numbat sanctuary", groups=["hr"]), 10)
    assert len(hr.locations) == 2 and "file:///srv/share/hr/figures.pdf" in {hr.url, *hr.locations}
    page = target.search_page(parse_query("extension:pdf", groups=["hr"]), 10)
    assert page.total == 1 and len(page.hits) == 1 and len(page.hits[0].locations) == 2
    [narrowed] = target.search_page(parse_query("extension:pdf -path:/srv/share/b"), 10).hits  # filters hold for all
    assert (narrowed.url, narrowed.locations) == ("file:///srv/share/a/figures.pdf", [])
