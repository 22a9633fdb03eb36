"""``beamtrawl serve`` in a real browser: Debian's headless Chromium driven by Selenium (chromium-driver),
over the crawled corpus of tests/serve_site.py. Search, narrow by a facet, page, open a document, sign in
and see more, on a desktop and a phone-sized window. Screenshots go to tests/output/serve/."""

from __future__ import annotations

from pathlib import Path

import pytest
from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from tests.serve_site import PASSWORD, REPORTS, make_site, served

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"  # Debian's: tests/run.sh installs them
SHOTS = Path(__file__).resolve().parent / "output" / "serve"
PUBLIC_NUMBATS = REPORTS + 3  # the reports, the hostile name, the hostile page and the PDF


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    with served(make_site(tmp_path_factory.mktemp("browse"))) as url:
        yield url


@pytest.fixture
def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1280,900", "--lang=en"):
        options.add_argument(argument)
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    driver.set_page_load_timeout(60)
    driver.implicitly_wait(10)  # a search sent with Enter loads a new page: look for its elements once it has
    yield driver
    driver.quit()


def _shot(driver, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(SHOTS / name))


def _count(driver) -> str:
    return driver.find_element(By.ID, "count").text.split("·")[0].strip()


def test_search_narrow_page_and_open_a_document(browser, base):
    browser.get(base + "/")
    box = browser.find_element(By.CSS_SELECTOR, "input[name=q]")
    assert browser.switch_to.active_element == box  # the box has the focus: type at once
    assert browser.find_element(By.CSS_SELECTOR, "label[for=q]").text == "Search the documents"
    box.send_keys("numbat", Keys.ENTER)  # the keyboard alone runs a search
    assert _count(browser) == f"{PUBLIC_NUMBATS} documents"
    with pytest.raises(NoAlertPresentException):  # hostile titles and names stayed text
        browser.switch_to.alert.text  # noqa: B018
    assert any("<script>" in e.text for e in browser.find_elements(By.CSS_SELECTOR, ".hit h2 a"))
    _shot(browser, "results.png")

    browser.find_element(By.LINK_TEXT, "txt").click()  # the extension facet narrows the search
    assert _count(browser) == f"{REPORTS + 1} documents"
    assert browser.find_element(By.ID, "q").get_attribute("value") == "numbat extension:txt"
    browser.find_element(By.CSS_SELECTOR, "a[rel=next]").click()
    assert "Page 2 of 2" in browser.find_element(By.CSS_SELECTOR, "nav.pages").text
    assert len(browser.find_elements(By.CSS_SELECTOR, "li.hit")) == REPORTS + 1 - 20
    browser.find_element(By.LINK_TEXT, "Newest first").click()
    first = browser.find_element(By.CSS_SELECTOR, "li.hit h2 a")
    assert first.text.startswith("report-26")
    _shot(browser, "narrowed.png")

    first.send_keys(Keys.ENTER)  # open the document from the keyboard
    assert browser.find_element(By.TAG_NAME, "body").text.startswith("Numbat survey 26")


def test_sign_in_and_see_more(browser, base):
    browser.get(base + "/?q=salary")
    assert "No documents match" in browser.find_element(By.TAG_NAME, "main").text
    # What a browser sends once the person typed their name and password into its sign-in prompt.
    import base64

    token = base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
    browser.execute_cdp_cmd("Network.enable", {})
    browser.execute_cdp_cmd("Network.setExtraHTTPHeaders", {"headers": {"Authorization": f"Basic {token}"}})
    browser.find_element(By.LINK_TEXT, "Sign in").click()
    assert browser.current_url == base + "/?q=salary"  # back to the same search
    assert "Signed in as alice (hr, staff)" in browser.find_element(By.CSS_SELECTOR, ".who").text
    assert _count(browser) == "1 document"
    browser.find_element(By.CSS_SELECTOR, "li.hit h2 a").click()
    assert browser.find_element(By.TAG_NAME, "body").text.startswith("Salary review")
    browser.get(base + "/?q=numbat")
    assert _count(browser) == f"{PUBLIC_NUMBATS + 1} documents"
    _shot(browser, "signed-in.png")


def test_readable_on_a_phone(browser, base):
    browser.set_window_size(390, 844)
    browser.get(base + "/?q=numbat")
    wide = browser.execute_script("return document.documentElement.scrollWidth > window.innerWidth")
    assert not wide  # no sideways scrolling
    box = browser.find_element(By.ID, "q").rect
    assert box["width"] > 200
    _shot(browser, "phone.png")


def test_errors_and_empty_results_are_explained(browser, base):
    browser.get(base + "/?q=" + "x%2A+" * 9)
    alert = browser.find_element(By.CSS_SELECTOR, "[role=alert]").text
    assert "too many prefix terms" in alert
    browser.get(base + "/?q=zzyzx")
    assert "No documents match" in browser.find_element(By.TAG_NAME, "main").text
    _shot(browser, "empty.png")


def test_text_view_modified_facet_and_readable_types(browser, base):
    """Issue 28, items 11, 13 and 14: a hit's indexed text, the Modified facet, types by name."""
    browser.get(base + "/?q=numbat")
    facets = browser.find_element(By.CSS_SELECTOR, "nav.facets").text
    assert "Modified" in facets and "older" in facets  # the site's files are from 2020 and 2023
    assert "plain text document" in facets and "text/plain" not in facets  # the type itself is on hover
    browser.find_element(By.LINK_TEXT, "older").click()
    assert _count(browser) == f"{PUBLIC_NUMBATS} documents"
    assert browser.find_element(By.ID, "q").get_attribute("value").startswith("numbat modified:<")
    browser.get(base + "/?q=numbat+extension:html")
    browser.find_element(By.CSS_SELECTOR, "li.hit a.text").click()
    main = browser.find_element(By.TAG_NAME, "main")
    assert "Text as indexed" in main.text and "text/html" in main.text
    assert [m.text for m in main.find_elements(By.TAG_NAME, "mark")][:1] == ["numbat"]
    with pytest.raises(NoAlertPresentException):  # the page's script is text here
        browser.switch_to.alert.text  # noqa: B018
    _shot(browser, "text-view.png")
