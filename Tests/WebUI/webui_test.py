#!/usr/bin/env python3
"""Drives the daemon's web page in headless Chromium: add, watch, pause, resume, options, paging.

Run by Tests/HaulEndToEndTests/WebPageTests.swift against a real `haul serve` (started with the
default 3 downloads at once and no speed limit); by hand:

    python3 Tests/WebUI/webui_test.py --page 'http://127.0.0.1:PORT/#token=SECRET' \\
        --fast-url http://.../small.bin --slow-url http://.../big.bin \\
        --multi-url http://.../big-and-slow-per-connection.bin --missing-url http://.../a-404.bin \\
        --batch-url http://.../slow-small.bin --screenshots /tmp/shots

`--batch-url` is added 150 times with `?n=1`, `?n=2`, ... (the test server ignores the query
string), so it must be slow enough not to finish while the test pages through them.

Needs Debian's chromium, chromium-driver and python3-selenium. Waits are explicit and generous
(no timing assertions): each step waits for the page's stable hooks (`tr[data-id][data-status]`,
`.bar[data-percent]`, `.conns[data-connections]`, `.error`, `#range[data-offset][data-total]`, ...)
and checks what the page did through the API itself (urllib, with the token from `--page`).
Exits 0 on success, 1 with a message on any failure or timeout.
"""

import argparse
import json
import os
import shutil
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

from selenium import webdriver
from selenium.common.exceptions import (ElementClickInterceptedException, StaleElementReferenceException, TimeoutException,
                                        WebDriverException)
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import Select, WebDriverWait

WAIT = 60
BATCH = 150
ALL = "running,queued,failed,paused,completed"
ORDER = ALL.split(",")
STARTED = time.monotonic()

# The row of a download, found by its URL: the page's hooks as plain data, so waits never hold
# stale elements while rows re-render.
ROW_STATE = """
const row = Array.from(document.querySelectorAll('tr[data-id]')).find(r => r.dataset.url === arguments[0]);
if (!row) return null;
const bar = row.querySelector('.bar');
const speed = row.querySelector('.speed');
const conns = row.querySelector('.conns');
const error = row.querySelector('.error');
const name = row.querySelector('.name');
return {id: row.dataset.id, status: row.dataset.status, percent: bar ? bar.getAttribute('data-percent') : null,
        speed: speed ? speed.textContent : '', name: name ? name.textContent : '',
        error: error ? error.textContent : null, errorShown: !!error && error.offsetParent !== null,
        connections: conns ? conns.getAttribute('data-connections') : null, connectionsText: conns ? conns.textContent : ''};
"""

# The list as shown: every row in order, and the pager.
LIST_STATE = """
const range = document.getElementById('range');
return {rows: Array.from(document.querySelectorAll('#rows tr[data-id]')).map(r => ({id: r.dataset.id, url: r.dataset.url, status: r.dataset.status})),
        offset: Number(range.dataset.offset), total: Number(range.dataset.total), range: range.textContent,
        prev: !document.getElementById('prev').disabled, next: !document.getElementById('next').disabled};
"""


class Failure(Exception):
    pass


def runs(items):
    """`['a', 'a', 'b']` as `a×2 b`: a page of statuses in one short line."""
    out = []
    for item in items:
        if out and out[-1][0] == item:
            out[-1][1] += 1
        else:
            out.append([item, 1])
    return " ".join(f"{item}×{count}" if count > 1 else item for item, count in out)


def log(text):
    print(f"[{time.monotonic() - STARTED:6.1f}s] {text}", flush=True)


def start_browser():
    options = webdriver.ChromeOptions()
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--window-size=1280,900", "--no-first-run", "--disable-extensions"):
        options.add_argument(argument)
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if browser:
        options.binary_location = browser
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver_path = shutil.which("chromedriver") or "/usr/bin/chromedriver"
    return webdriver.Chrome(service=Service(executable_path=driver_path), options=options)


class API:
    """The daemon's API straight from the script, to check what the page did."""

    def __init__(self, page):
        parts = urllib.parse.urlsplit(page)
        self.origin = f"{parts.scheme}://{parts.netloc}"
        token = urllib.parse.parse_qs(parts.fragment).get("token")
        if not token:
            raise Failure(f"--page has no #token=: {page}")
        self.token = token[0]

    def call(self, method, path, body=None):
        """Returns (status, headers, JSON body) for any status."""
        request = urllib.request.Request(self.origin + path, method=method,
                                         data=None if body is None else json.dumps(body).encode(),
                                         headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, response.headers, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            return error.code, error.headers, json.loads(error.read() or b"null")

    def ok(self, method, path, body=None):
        status, _, answer = self.call(method, path, body)
        if status not in (200, 201):
            raise Failure(f"{method} {path} answered {status}: {answer}")
        return answer

    def count(self, statuses):
        """How many downloads have one of `statuses`, from `X-Total-Count`."""
        status, headers, answer = self.call("GET", f"/api/v1/downloads?status={statuses}&limit=0")
        if status != 200 or headers.get("X-Total-Count") is None:
            raise Failure(f"GET /api/v1/downloads?status={statuses}&limit=0 answered {status} with no X-Total-Count: {answer}")
        return int(headers["X-Total-Count"])

    def options(self):
        return self.ok("GET", "/api/v1/options")


class PageTest:
    def __init__(self, driver, arguments):
        self.driver = driver
        self.arguments = arguments
        self.api = API(arguments.page)
        self.shots = 0

    def screenshot(self, name):
        self.shots += 1
        path = os.path.join(self.arguments.screenshots, f"{self.shots:02d}-{name}.png")
        if self.driver.save_screenshot(path):
            log(f"screenshot {path}")

    def wait(self, description, condition, timeout=WAIT):
        """Waits until `condition(driver)` is truthy and returns it; fails with `description`."""
        try:
            return WebDriverWait(self.driver, timeout, poll_frequency=0.1).until(condition)
        except TimeoutException:
            raise Failure(f"timed out after {timeout} s waiting for {description}") from None

    def row(self, url):
        return self.driver.execute_script(ROW_STATE, url)

    def listing(self):
        return self.driver.execute_script(LIST_STATE)

    def wait_for_row(self, url, description, predicate, failed_is_failure=True):
        """Waits until the row of `url` satisfies `predicate`; a failed download fails at once."""
        def check(_):
            state = self.row(url)
            if state and predicate(state):
                return state
            if state and state["status"] == "failed" and failed_is_failure:
                raise Failure(f"{description}: the download failed instead")
            return None
        try:
            state = self.wait(description, check)
        except Failure as failure:
            raise Failure(f"{failure} (row of {url}: {self.row(url)})") from None
        log(f"{description}: {state}")
        return state

    def wait_for_list(self, description, predicate):
        def check(_):
            state = self.listing()
            return state if predicate(state) else None
        try:
            state = self.wait(description, check)
        except Failure as failure:
            state = self.listing()
            raise Failure(f"{failure} (range {state['range']!r}, offset {state['offset']}, total {state['total']}, "
                          f"{len(state['rows'])} rows: {runs([r['status'] for r in state['rows']])})") from None
        log(f"{description}: range {state['range']!r}, {len(state['rows'])} rows")
        return state

    def wait_for_api(self, description, predicate):
        """Waits until `predicate()` (which asks the API) is truthy and returns it."""
        result = self.wait(description, lambda _: predicate())
        log(f"{description}: {result}")
        return result

    def message(self):
        element = self.driver.find_element(By.ID, "message")
        return element.text, "error" in (element.get_attribute("class") or "")

    def wait_for_message(self, description, predicate):
        """Waits until `predicate(text, is_error)` holds for #message and returns its text."""
        def check(_):
            text, is_error = self.message()
            return (text,) if predicate(text, is_error) else None
        try:
            text, = self.wait(description, check)
        except Failure as failure:
            raise Failure(f"{failure} (#message: {self.message()})") from None
        log(f"{description}: {text!r}")
        return text

    def add(self, url):
        field = self.wait("the #urls textarea", EC.element_to_be_clickable((By.ID, "urls")))
        field.clear()
        field.send_keys(url)
        self.wait("the #add button", EC.element_to_be_clickable((By.ID, "add"))).click()
        log(f"added {url}")

    def click_for_prompt(self, download_id, button):
        """Clicks `button` and returns the prompt it opens. A click that lands while the row is drawn
        again can open none (seen about once in ten runs, on the second Limit click): after 5 s
        without a prompt the button is clicked again, at most three times, each logged."""
        for attempt in range(3):
            self.click(download_id, button)
            try:
                return WebDriverWait(self.driver, 5, poll_frequency=0.1).until(EC.alert_is_present())
            except TimeoutException:
                log(f"no prompt 5 s after clicking {button} on {download_id} (click {attempt + 1} of 3)")
        raise Failure(f"no prompt after three clicks of {button} on {download_id}")

    def click(self, download_id, button):
        selector = f'tr[data-id="{download_id}"] button.{button}'
        # A row is drawn again when its download's events come: a button found clickable can be
        # replaced or covered before the click lands. Found again, up to five times.
        for attempt in range(5):
            try:
                self.wait(f"the {button} button of {download_id}", EC.element_to_be_clickable((By.CSS_SELECTOR, selector))).click()
                break
            except (ElementClickInterceptedException, StaleElementReferenceException):
                if attempt == 4:
                    raise
                time.sleep(0.2)
        log(f"clicked {button} on {download_id}")

    def press(self, element_id):
        self.wait(f"the #{element_id} button", EC.element_to_be_clickable((By.ID, element_id))).click()
        log(f"clicked #{element_id}")

    def set_options(self, concurrency=None, limit=None):
        """Types into the options form (None leaves a field as it is) and applies."""
        for element_id, text in (("concurrency", concurrency), ("limit", limit)):
            if text is None:
                continue
            field = self.wait(f"the #{element_id} field", EC.element_to_be_clickable((By.ID, element_id)))
            field.clear()
            if text:
                field.send_keys(text)
        self.driver.execute_script("document.getElementById('message').textContent = ''")
        self.press("apply")

    def field(self, element_id):
        return self.driver.find_element(By.ID, element_id).get_attribute("value")

    def run(self):
        arguments = self.arguments
        fast, slow, multi, missing = arguments.fast_url, arguments.slow_url, arguments.multi_url, arguments.missing_url

        self.driver.get(arguments.page)
        self.wait("the page to load (#add)", EC.presence_of_element_located((By.ID, "add")))
        self.wait("the token to move from the address bar to localStorage",
                  lambda d: d.execute_script("return location.hash === '' && !!localStorage.getItem('haul.token')"))
        if self.driver.find_element(By.ID, "tokenform").is_displayed():
            raise Failure(f"the page asks for a token: {self.message()[0]!r}")
        self.wait("the summary line", lambda d: d.find_element(By.ID, "summary").text.strip())
        options = self.api.options()
        self.wait(f"the options form to show the daemon's {options}",
                  lambda _: self.field("concurrency") == str(options["maxConcurrentDownloads"]) and self.field("limit") == "")
        self.screenshot("empty")

        self.add(slow)
        slow_row = self.wait_for_row(slow, "slow download running", lambda s: s["status"] == "running")
        self.screenshot("slow-running")

        self.add(fast)
        self.wait_for_row(fast, "fast download completed at 100%",
                          lambda s: s["status"] == "completed" and s["percent"] == "100")
        self.screenshot("fast-completed")

        self.failed_download_shows_its_error(missing)

        self.click(slow_row["id"], "pause")
        self.wait_for_row(slow, "slow download paused", lambda s: s["status"] == "paused")
        self.screenshot("slow-paused")

        self.click(slow_row["id"], "resume")
        self.wait_for_row(slow, "slow download resumed", lambda s: s["status"] in ("running", "completed"))
        self.screenshot("slow-resumed")

        # Once stored, the token is remembered: the bare address shows the same list.
        parts = urllib.parse.urlsplit(arguments.page)
        self.driver.get(urllib.parse.urlunsplit(parts._replace(fragment="")))
        self.wait_for_row(fast, "after a reload without the token, the fast download is listed",
                          lambda s: s["status"] == "completed" and s["percent"] == "100")
        reloaded = self.wait_for_row(slow, "after a reload, the slow download is listed",
                                     lambda s: s["status"] in ("running", "completed"))
        self.screenshot("reloaded")

        # Live from the event stream: the bar moves and a speed shows.
        self.wait_for_row(slow, "the slow download's bar moving, with a speed",
                          lambda s: s["status"] == "completed" or (int(s["percent"]) > int(reloaded["percent"]) and s["speed"]))
        self.screenshot("slow-progressing")

        # A running download shows its live connections of its most (one here: added without `connections`).
        self.wait_for_row(slow, "the slow download's connections, 1/1",
                          lambda s: s["status"] == "completed"
                          or (s["status"] == "running" and s["connections"] == "1" and s["connectionsText"].strip() == "1/1"))
        done = self.row(fast)
        if done and done["connectionsText"].strip():
            raise Failure(f"a finished download shows connections: {done!r}")

        self.running_download_shows_its_connections(multi)
        self.download_limit_changes_from_its_row(multi)
        self.options_change_the_daemon()
        self.pages_through_more_than_a_page()
        self.pause_all_and_resume_all()

        text, is_error = self.message()
        if is_error:
            raise Failure(f"the page shows an error: {text!r}")

    def failed_download_shows_its_error(self, missing):
        """A download the server answers 404 shows the daemon's error message in its row."""
        self.add(missing)
        state = self.wait_for_row(missing, "the 404 download failed, with an error message",
                                  lambda s: s["status"] == "failed" and (s["error"] or "").strip(), failed_is_failure=False)
        error = self.api.ok("GET", f"/api/v1/downloads/{state['id']}")["error"]
        if not error or state["error"].strip() != error["message"] or "404" not in state["error"] or not state["errorShown"]:
            raise Failure(f"the row shows error {state['error']!r} (visible: {state['errorShown']}), the API says {error!r}")
        self.screenshot("failed-with-error")

        # Hostile text from the daemon (here a URL, the name of a download without a file name)
        # is shown as text, never parsed as HTML.
        hostile = missing + "?<img/src=x/onerror=window.pwned=1>"
        self.add(hostile)
        state = self.wait_for_row(hostile, "the download with markup in its URL failed", lambda s: s["status"] == "failed",
                                  failed_is_failure=False)
        if "<img/src=x/onerror=window.pwned=1>" not in state["name"]:
            raise Failure(f"the markup in the URL is not shown as text: {state['name']!r}")
        injected = self.driver.execute_script("return [document.querySelectorAll('#rows img').length, window.pwned === undefined]")
        if injected != [0, True]:
            raise Failure(f"markup from a URL became HTML: {injected}")

    def running_download_shows_its_connections(self, multi):
        """A download added with 4 connections shows them live as 4/4 while it runs."""
        added = self.api.ok("POST", "/api/v1/downloads", {"url": multi, "connections": 4})
        self.wait_for_row(multi, "the 4-connection download running with 4/4 connections",
                          lambda s: s["status"] == "running" and s["connections"] == "4" and s["connectionsText"].strip() == "4/4")
        self.screenshot("four-connections")
        self.api.ok("POST", f"/api/v1/downloads/{added['id']}/pause")
        self.wait_for_row(multi, "the 4-connection download paused, showing no connections",
                          lambda s: s["status"] == "paused" and s["connections"] == "0" and s["connectionsText"].strip() == "")

    def download_limit_changes_from_its_row(self, url):
        """The Limit button asks for a download's own limit and the row shows it; `none` removes it."""
        download_id = self.wait_for_row(url, "the download to limit", lambda s: s["status"] != "completed")["id"]
        shown = f'return document.querySelector(\'tr[data-id="{download_id}"] .rate\').dataset.limit'
        for text, expected in (("300K", 300 * 1024), ("none", None)):
            prompt = self.click_for_prompt(download_id, "limit")
            prompt.send_keys(text)
            prompt.accept()
            self.wait_for_api(f"the download's own limit {expected}",
                              lambda: self.api.ok("GET", f"/api/v1/downloads/{download_id}")["maxBytesPerSecond"] == expected)
            self.wait(f"its row to show the limit {expected}",
                      lambda d: d.execute_script(shown) == ("" if expected is None else str(expected)))
        self.screenshot("download-limit")

    def options_change_the_daemon(self):
        """The options form sets concurrency and the global limit, sending only what changed."""
        self.set_options(concurrency="2")
        self.wait_for_api("maxConcurrentDownloads 2 after the page set it", lambda: self.api.options()["maxConcurrentDownloads"] == 2)
        self.wait_for_message("the page's confirmation", lambda text, is_error: text and not is_error)

        # Changed behind the page's back: setting the limit must not put the page's stale 2 back.
        self.api.ok("PATCH", "/api/v1/options", {"maxConcurrentDownloads": 1})
        self.set_options(limit="500K")
        self.wait_for_api("the global limit 500K = 512000 B/s", lambda: self.api.options()["maxBytesPerSecond"] == 512000)
        options = self.api.options()
        if options["maxConcurrentDownloads"] != 1:
            raise Failure(f"setting the limit also sent the page's stale concurrency: {options}")
        self.wait("the form to show the daemon's options after saving (1, 500K)",
                  lambda _: self.field("concurrency") == "1" and self.field("limit") == "500K")
        self.screenshot("options-set")

        self.set_options(limit="5M")
        self.wait_for_api("the global limit 5M", lambda: self.api.options()["maxBytesPerSecond"] == 5 << 20)
        self.set_options(limit="")
        self.wait_for_api("no global limit after emptying the field", lambda: self.api.options()["maxBytesPerSecond"] is None)

        # Errors show in the page: the page's own (a rate it cannot read) and the API's.
        self.set_options(limit="fast")
        self.wait_for_message("the page's error for an unreadable limit", lambda text, is_error: is_error and "fast" in text)
        status, _, answer = self.api.call("PATCH", "/api/v1/options", {"maxConcurrentDownloads": 0})
        if status != 400:
            raise Failure(f"the API accepts 0 downloads at once: {status} {answer}")
        self.set_options(concurrency="0", limit="")
        self.wait_for_message(f"the API's error {answer['error']['message']!r} in the page",
                              lambda text, is_error: is_error and text == answer["error"]["message"])
        self.screenshot("options-error")
        options = self.api.options()
        if options["maxConcurrentDownloads"] != 1 or options["maxBytesPerSecond"] is not None:
            raise Failure(f"a refused change changed the options: {options}")
        self.set_options(concurrency="1")  # the form shows the daemon's value again

    def pages_through_more_than_a_page(self):
        """150 more downloads, queued behind the running one: 100 rows a page, running first."""
        batch = [{"url": f"{self.arguments.batch_url}?n={n}", "fileName": f"batch-{n:03d}.bin"} for n in range(1, BATCH + 1)]
        added = self.api.ok("POST", "/api/v1/downloads", batch)
        if len(added) != BATCH:
            raise Failure(f"added {len(added)} downloads, not {BATCH}")
        last = batch[-1]["url"]
        total = self.api.count(ALL)
        if total <= 100 + 1:
            raise Failure(f"only {total} downloads: not enough for a second page")

        def ordered(rows):
            ranks = [ORDER.index(r["status"]) for r in rows]
            return ranks == sorted(ranks)

        first = self.wait_for_list(f"page 1: 100 of {total} rows, running and queued first",
                                   lambda s: s["offset"] == 0 and s["total"] == total and len(s["rows"]) == 100
                                   and s["next"] and not s["prev"] and s["rows"][0]["status"] == "running" and ordered(s["rows"]))
        if any(r["url"] == last for r in first["rows"]):
            raise Failure("the last added download is on page 1")
        self.screenshot("page-1")

        self.press("next")
        second = self.wait_for_list(f"page 2: the other {total - 100} rows",
                                    lambda s: s["offset"] == 100 and s["total"] == total and len(s["rows"]) == total - 100
                                    and s["prev"] and not s["next"] and ordered(s["rows"]))
        if not any(r["url"] == last for r in second["rows"]):
            raise Failure(f"the last added download is not on page 2: {[r['url'] for r in second['rows']]}")
        if {r["id"] for r in first["rows"]} & {r["id"] for r in second["rows"]}:
            raise Failure("pages 1 and 2 share rows")
        self.screenshot("page-2")

        self.press("prev")
        self.wait_for_list("page 1 again", lambda s: s["offset"] == 0 and len(s["rows"]) == 100 and s["next"])

        failed = self.api.count("failed")
        Select(self.driver.find_element(By.ID, "filter")).select_by_value("failed")
        self.wait_for_list(f"the failed filter: {failed} failed rows",
                           lambda s: s["total"] == failed and len(s["rows"]) == failed and all(r["status"] == "failed" for r in s["rows"])
                           and any(r["url"] == self.arguments.missing_url for r in s["rows"]))
        Select(self.driver.find_element(By.ID, "filter")).select_by_value(ALL)
        self.wait_for_list("all downloads again", lambda s: s["total"] == total and len(s["rows"]) == 100)

    def pause_all_and_resume_all(self):
        """Pause all leaves nothing running or queued; resume all leaves nothing paused."""
        self.press("pauseall")
        self.wait_for_api("no running or queued download after pause all", lambda: self.api.count("running,queued") == 0)
        self.wait_for_list("the page showing paused rows, none running or queued",
                           lambda s: s["rows"] and any(r["status"] == "paused" for r in s["rows"])
                           and not any(r["status"] in ("running", "queued") for r in s["rows"]))
        self.wait_for_message("the count of paused downloads", lambda text, is_error: not is_error and text.startswith("Paused "))
        self.screenshot("paused-all")

        self.press("resumeall")
        self.wait_for_api("no paused download after resume all", lambda: self.api.count("paused") == 0)
        self.wait_for_list("the page showing running rows, none paused",
                           lambda s: s["rows"] and s["rows"][0]["status"] == "running"
                           and not any(r["status"] == "paused" for r in s["rows"]))
        self.wait_for_message("the count of resumed downloads", lambda text, is_error: not is_error and text.startswith("Resumed "))
        self.screenshot("resumed-all")


def describe_page(driver):
    """What the page showed, for a failure report."""
    lines = []
    try:
        lines.append(f"url: {driver.current_url}")
        lines.append(f"message: {driver.find_element(By.ID, 'message').text!r}")
        lines.append(f"range: {driver.find_element(By.ID, 'range').text!r}")
        for row in driver.find_elements(By.CSS_SELECTOR, "tr[data-id]")[:20]:
            lines.append(f"row {row.get_attribute('data-id')} [{row.get_attribute('data-status')}]: {row.text!r}")
        for entry in driver.get_log("browser"):
            lines.append(f"console {entry.get('level')}: {entry.get('message')}")
    except WebDriverException as error:
        lines.append(f"(cannot read the page: {error.msg})")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--page", required=True, help="the page's URL, with #token=SECRET")
    parser.add_argument("--fast-url", required=True, help="a small file that downloads quickly")
    parser.add_argument("--slow-url", required=True, help="a big throttled file that takes many seconds")
    parser.add_argument("--multi-url", required=True, help="a big file, throttled per connection, that accepts ranges")
    parser.add_argument("--missing-url", required=True, help="a URL the server answers 404")
    parser.add_argument("--batch-url", required=True, help="a throttled file added 150 times with ?n=1... (query ignored by the server)")
    parser.add_argument("--screenshots", required=True, help="directory for PNG screenshots")
    arguments = parser.parse_args()
    os.makedirs(arguments.screenshots, exist_ok=True)

    try:
        driver = start_browser()
    except WebDriverException as error:
        print(f"FAIL: cannot start headless Chromium: {error.msg}", file=sys.stderr)
        return 1
    test = PageTest(driver, arguments)
    try:
        test.run()
        log("PASS")
        return 0
    except (Failure, WebDriverException) as error:
        reason = error.msg if isinstance(error, WebDriverException) else str(error)
        print(f"FAIL: {reason}", file=sys.stderr)
        print(describe_page(driver), file=sys.stderr)
        try:
            test.screenshot("failure")
        except WebDriverException:
            pass
        return 1
    finally:
        driver.quit()


if __name__ == "__main__":
    sys.exit(main())
