#!/usr/bin/env python3
"""Drives the daemon's web page in headless Chromium: add, watch, pause, resume.

Run by Tests/HaulEndToEndTests/WebPageTests.swift against a real `haul serve`; by hand:

    python3 Tests/WebUI/webui_test.py --page 'http://127.0.0.1:PORT/#token=SECRET' \\
        --fast-url http://.../small.bin --slow-url http://.../big.bin --screenshots /tmp/shots

Needs Debian's chromium, chromium-driver and python3-selenium. Waits are explicit and generous
(no timing assertions): each step waits for the page's stable hooks, `tr[data-id][data-status]`,
`.bar[data-percent]` and `.conns[data-connections]`. Exits 0 on success, 1 with a message on any failure or timeout.
"""

import argparse
import os
import shutil
import sys
import time
import urllib.parse

from selenium import webdriver
from selenium.common.exceptions import TimeoutException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

WAIT = 60
STARTED = time.monotonic()

# The row of a download, found by its URL: the page's hooks as plain data, so waits never hold
# stale elements while rows re-render.
ROW_STATE = """
const row = Array.from(document.querySelectorAll('tr[data-id]')).find(r => r.dataset.url === arguments[0]);
if (!row) return null;
const bar = row.querySelector('.bar');
const speed = row.querySelector('.speed');
const conns = row.querySelector('.conns');
return {id: row.dataset.id, status: row.dataset.status, percent: bar ? bar.getAttribute('data-percent') : null,
        speed: speed ? speed.textContent : '',
        connections: conns ? conns.getAttribute('data-connections') : null, connectionsText: conns ? conns.textContent : ''};
"""


class Failure(Exception):
    pass


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


class PageTest:
    def __init__(self, driver, arguments):
        self.driver = driver
        self.arguments = arguments
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

    def wait_for_row(self, url, description, predicate):
        """Waits until the row of `url` satisfies `predicate`; a failed download fails at once."""
        def check(_):
            state = self.row(url)
            if state and predicate(state):
                return state
            if state and state["status"] == "failed":
                raise Failure(f"{description}: the download failed instead")
            return None
        try:
            state = self.wait(description, check)
        except Failure as failure:
            raise Failure(f"{failure} (row of {url}: {self.row(url)})") from None
        log(f"{description}: {state}")
        return state

    def message(self):
        element = self.driver.find_element(By.ID, "message")
        return element.text, "error" in (element.get_attribute("class") or "")

    def add(self, url):
        field = self.wait("the #urls textarea", EC.element_to_be_clickable((By.ID, "urls")))
        field.clear()
        field.send_keys(url)
        self.wait("the #add button", EC.element_to_be_clickable((By.ID, "add"))).click()
        log(f"added {url}")

    def click(self, download_id, button):
        selector = f'tr[data-id="{download_id}"] button.{button}'
        self.wait(f"the {button} button of {download_id}", EC.element_to_be_clickable((By.CSS_SELECTOR, selector))).click()
        log(f"clicked {button} on {download_id}")

    def run(self):
        arguments = self.arguments
        fast, slow = arguments.fast_url, arguments.slow_url

        self.driver.get(arguments.page)
        self.wait("the page to load (#add)", EC.presence_of_element_located((By.ID, "add")))
        self.wait("the token to move from the address bar to localStorage",
                  lambda d: d.execute_script("return location.hash === '' && !!localStorage.getItem('haul.token')"))
        if self.driver.find_element(By.ID, "tokenform").is_displayed():
            raise Failure(f"the page asks for a token: {self.message()[0]!r}")
        self.wait("the summary line", lambda d: d.find_element(By.ID, "summary").text.strip())
        self.screenshot("empty")

        self.add(slow)
        slow_row = self.wait_for_row(slow, "slow download running", lambda s: s["status"] == "running")
        self.screenshot("slow-running")

        self.add(fast)
        self.wait_for_row(fast, "fast download completed at 100%",
                          lambda s: s["status"] == "completed" and s["percent"] == "100")
        self.screenshot("fast-completed")

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

        # A running download shows its live connections (one here: added without `connections`).
        self.wait_for_row(slow, "the slow download's connection count",
                          lambda s: s["status"] == "completed"
                          or (s["status"] == "running" and s["connections"] == "1" and s["connectionsText"].strip() == "1"))
        done = self.row(fast)
        if done and done["connectionsText"].strip():
            raise Failure(f"a finished download shows connections: {done!r}")

        text, is_error = self.message()
        if is_error:
            raise Failure(f"the page shows an error: {text!r}")


def describe_page(driver):
    """What the page showed, for a failure report."""
    lines = []
    try:
        lines.append(f"url: {driver.current_url}")
        lines.append(f"message: {driver.find_element(By.ID, 'message').text!r}")
        for row in driver.find_elements(By.CSS_SELECTOR, "tr[data-id]"):
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
