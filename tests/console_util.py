"""The console's browser tests: headless Debian Chromium driven by Selenium (its own chromedriver from
Debian, so nothing is downloaded). Screenshots go to build/test-artifacts/console/ and are kept."""
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from conftest import eventually

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "build" / "test-artifacts" / "console"
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
# How the browser tests wait (with conftest's eventually): the page may re-render under a read (a stale
# element), so any error means look again.
ON_PAGE = {"interval": 0.1, "retry_on": (Exception,)}


@pytest.fixture
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
        pytest.fail("Debian's chromium and chromium-driver are not installed (scripts/install-test.sh installs them)")
    profile = tempfile.mkdtemp(prefix="sediment-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    # This machine's network is closed: without these Chromium keeps trying Google's hosts.
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--window-size=1400,1000", f"--user-data-dir={profile}"):
        opts.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=opts)
    driver.set_page_load_timeout(30)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def shot(driver, name):
    """Saves a screenshot as build/test-artifacts/console/<name>.png and returns its path."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    driver.save_screenshot(str(path))
    return path


def wait_for(driver, css, timeout=20, text=None, visible=True):
    """The first element matching `css` (containing `text`, if given), once it is there."""
    from selenium.webdriver.common.by import By

    def found():
        for el in driver.find_elements(By.CSS_SELECTOR, css):
            if (not visible or el.is_displayed()) and (text is None or text in el.text):
                return el
        return None
    try:
        return eventually(found, timeout=timeout, what=f"{css!r}{' with ' + repr(text) if text else ''}", **ON_PAGE)
    except AssertionError as e:
        raise AssertionError(f"{e}; page text:\n{driver.find_element(By.TAG_NAME, 'body').text[:3000]}") from None


def login(driver, url, key, secret):
    """Opens the console and logs in with an access key."""
    driver.get(url + "/")
    wait_for(driver, "#access-key").send_keys(key)
    driver.find_element("css selector", "#secret-key").send_keys(secret)
    driver.find_element("css selector", "#login-submit").click()
    wait_for(driver, "#logout")
