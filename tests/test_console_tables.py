"""The web console's tables and jobs pages in headless Chromium against a real server that ingests a
synthetic chain, and how the server serves the console next to the S3 gateway."""
import time

import boto3
import pytest
import requests
from botocore.config import Config as BotoConfig
from selenium.webdriver.common.by import By

from conftest import ADMIN_KEY, ADMIN_SECRET, eventually, set_up_admin

from console_util import browser, login, shot, wait_for  # noqa: F401

# The demo's chain, faster; background passes at most once an hour, so the page's button runs the one
# that shows.
INGESTING = """
[writer]
bytes = 8388608
[writer.compactor]
cooldown_duration = 20.0
max_eager_bytes = 262144
min_interval = 3600.0
gc_manifest_grace_period = 60.0
[worker]
poll_interval_secs = 0.5
[[jobs]]
dataset = "demo"
history_blocks = 40
block_time = 0.2
txs_per_block = 50
logs_per_tx = 2.0
"""


@pytest.fixture
def ingesting(start_server, tmp_path):
    cfg = tmp_path / "sediment.toml"
    cfg.write_text(INGESTING)
    return start_server("--config", str(cfg))


def histogram_of(driver):
    rows = driver.find_elements(By.CSS_SELECTOR, "#histogram tbody tr")
    return {r.get_attribute("data-bucket"): int(r.find_element(By.CSS_SELECTOR, ".bucket-files").text.replace(",", ""))
            for r in rows}


def live_files(server, table):
    return server.get(f"/api/v1/datasets/demo/tables/{table}").json()["files"]


def test_table_page_shows_a_pass_change_the_histogram(ingesting, browser):
    server, driver = ingesting, browser
    eventually(lambda: live_files(server, "logs") >= 12, timeout=60, interval=0.5, what="12 live files of demo.logs")

    # Before set-up the tables need no key: the list, then the table.
    driver.get(server.url + "/")
    row = wait_for(driver, '#tables tr[data-table="demo.logs"]')
    assert int(row.find_element(By.CSS_SELECTOR, ".files").text.replace(",", "")) >= 12
    shot(driver, "tables-list")
    row.find_element(By.CSS_SELECTOR, "a.table-link").click()
    wait_for(driver, "#table-name", text="demo.logs")
    wait_for(driver, "#histogram tbody tr")
    wait_for(driver, "#no-passes")  # nothing merged yet
    before = histogram_of(driver)
    assert sum(before.values()) >= 12
    api = server.get("/api/v1/datasets/demo/tables/logs/histogram").json()
    assert [b["label"] for b in api["buckets"]] == list(before), "the page shows the server's buckets"
    shot(driver, "table-before-pass")

    driver.find_element(By.CSS_SELECTOR, "#compact-now").click()
    log = wait_for(driver, "#compact-log", text="done:", timeout=60)
    assert "merged" in log.text, log.text
    assert "FAILED" not in log.text and "ERROR" not in log.text, log.text

    # The page refreshes itself: the pass is listed and the histogram moved.
    row = wait_for(driver, "#passes tbody tr", timeout=20)
    assert int(row.find_element(By.CSS_SELECTOR, ".merged").text) >= 1
    passes = server.get("/api/v1/datasets/demo/tables/logs/passes").json()["passes"]
    assert passes and passes[0]["merges"][0]["outcome"] == "merged"
    eventually(lambda: histogram_of(driver) != before, timeout=15, interval=0.5, what="the histogram to move")
    after = histogram_of(driver)
    assert after != before
    assert sum(after.values()) < sum(before.values()) + 5, (before, after)  # many files became one
    assert "merged-away files wait for GC" in driver.find_element(By.CSS_SELECTOR, "#gc-backlog").text
    shot(driver, "table-after-pass")

    # Jobs: the synthetic chain's head and lag.
    driver.find_element(By.CSS_SELECTOR, 'nav a[data-section="jobs"]').click()
    job = wait_for(driver, '#jobs tr[data-job="demo"]')
    assert int(job.find_element(By.CSS_SELECTOR, ".head").text.replace(",", "")) >= 40
    assert "running" in job.text
    shot(driver, "jobs")
    # Stop it and start it again from the page.
    job.find_element(By.CSS_SELECTOR, "button.stop-job").click()
    wait_for(driver, '#jobs tr[data-job="demo"] button.start-job')
    assert server.get("/api/v1/jobs").json()["jobs"][0]["running"] is False
    assert "stopped" in wait_for(driver, '#jobs tr[data-job="demo"]').text
    driver.find_element(By.CSS_SELECTOR, '#jobs tr[data-job="demo"] button.start-job').click()
    wait_for(driver, '#jobs tr[data-job="demo"] button.stop-job')
    assert server.get("/api/v1/jobs").json()["jobs"][0]["running"] is True


def test_after_setup_the_console_needs_a_key(ingesting, browser):
    server, driver = ingesting, browser
    set_up_admin(server)
    driver.get(server.url + "/#/tables")
    wait_for(driver, "#login-form")
    wait_for(driver, "#access-key").send_keys(ADMIN_KEY)
    driver.find_element(By.CSS_SELECTOR, "#secret-key").send_keys("not-the-secret")
    driver.find_element(By.CSS_SELECTOR, "#login-submit").click()
    err = wait_for(driver, "#login-error .error")
    assert "check the access key and secret" in err.text
    shot(driver, "login-refused")
    assert driver.execute_script("return sessionStorage.getItem('sediment.credentials')") is None
    login(driver, server.url, ADMIN_KEY, ADMIN_SECRET)
    assert wait_for(driver, "#who-user").text == "admin"
    wait_for(driver, '#tables tr[data-table="demo.logs"]')  # the tables API took the session
    # The secret is nowhere a script of the page could read it: the session is an HttpOnly cookie.
    stored = driver.execute_script("return JSON.stringify(Object.assign({}, sessionStorage, localStorage))")
    assert ADMIN_SECRET not in stored and ADMIN_KEY not in stored, stored
    assert "internal_auth_session" not in driver.execute_script("return document.cookie")
    assert any(c["name"] == "internal_auth_session" and c["httpOnly"] for c in driver.get_cookies())
    driver.find_element(By.CSS_SELECTOR, "#logout").click()
    wait_for(driver, "#login-form")
    assert not any(c["name"] == "internal_auth_session" and c["value"] for c in driver.get_cookies())
    driver.get(server.url + "/#/jobs")
    wait_for(driver, "#login-form")  # logged out for good


def test_login_sessions_over_http(ingesting):
    server = ingesting
    set_up_admin(server)
    bad = server.post("/api/v1/auth/login", json={"access_key_id": ADMIN_KEY, "secret_access_key": "nope"})
    assert bad.status_code == 401 and "Set-Cookie" not in bad.headers
    assert server.post("/api/v1/auth/login", json={"access_key_id": ADMIN_KEY}).status_code == 400
    r = server.post("/api/v1/auth/login", json={"access_key_id": ADMIN_KEY, "secret_access_key": ADMIN_SECRET})
    assert r.status_code == 200, r.text
    token = r.json()["token"]
    assert r.json()["token_expiration"] > time.time() + 3600
    cookie = r.headers["Set-Cookie"]
    assert cookie.startswith(f"internal_auth_session={token};") and "HttpOnly" in cookie and "SameSite=Strict" in cookie
    assert ADMIN_SECRET not in token

    jar = {"internal_auth_session": token}
    assert requests.get(server.url + "/api/v1/user", cookies=jar, timeout=10).json()["user"]["id"] == "admin"
    assert requests.get(server.url + "/api/v1/user", headers={"Authorization": f"Bearer {token}"},
                        timeout=10).status_code == 200
    assert requests.get(server.url + "/api/v1/jobs", cookies=jar, timeout=10).status_code == 200  # tables/jobs too
    # A write with only the cookie must come from the console's own scripts (X-Requested-With).
    create = lambda **kw: requests.post(server.url + "/api/v1/auth/users", json={"id": "carol"}, cookies=jar,
                                        timeout=10, **kw)
    assert create().status_code == 401
    assert requests.get(server.url + "/api/v1/auth/users/carol", cookies=jar, timeout=10).status_code == 404
    assert create(headers={"X-Requested-With": "XMLHttpRequest"}).status_code == 201
    forged = token[:-1] + ("0" if token[-1] != "0" else "1")
    assert requests.get(server.url + "/api/v1/user", cookies={"internal_auth_session": forged},
                        timeout=10).status_code == 401
    out = requests.post(server.url + "/api/v1/auth/logout", cookies=jar,
                        headers={"X-Requested-With": "XMLHttpRequest"}, timeout=10)
    assert out.status_code == 204 and "Max-Age=0" in out.headers["Set-Cookie"]
    # The session is over, for a copy of the cookie too.
    assert requests.get(server.url + "/api/v1/user", cookies=jar, timeout=10).status_code == 401
    assert requests.get(server.url + "/api/v1/user", headers={"Authorization": f"Bearer {token}"},
                        timeout=10).status_code == 401


def test_the_console_and_the_gateway_share_the_root(ingesting):
    server = ingesting
    html = {"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"}  # what a browser asks for
    page = requests.get(server.url + "/", headers=html, timeout=10)
    assert page.status_code == 200 and page.headers["Content-Type"].startswith("text/html")
    assert '/_console/app.js' in page.text
    assert "frame-ancestors 'none'" in page.headers["Content-Security-Policy"]
    again = requests.get(server.url + "/", headers={**html, "If-None-Match": page.headers["ETag"]}, timeout=10)
    assert again.status_code == 304 and not again.content
    # An anonymous S3 client (no Accept: text/html) and one with credentials keep ListBuckets.
    assert requests.get(server.url + "/", timeout=10).headers["Content-Type"].startswith("application/xml")
    assert requests.get(server.url + "/", headers=html, auth=("AKIANOSUCHKEY", "x"),
                        timeout=10).headers["Content-Type"].startswith("application/xml")
    for asset, kind in (("/_console/app.js", "text/javascript"), ("/_console/app.css", "text/css"),
                        ("/_console/vendor/chart.js", "text/javascript")):
        r = requests.get(server.url + asset, timeout=10)
        assert r.status_code == 200 and r.headers["Content-Type"].startswith(kind), asset
    assert "Chart" in requests.get(server.url + "/_console/vendor/chart.js", timeout=10).text
    for bad in ("/_console/nope.js", "/_console/..%2F..%2Fetc%2Fpasswd", "/_console/a/b/c.js"):
        r = requests.get(server.url + bad, timeout=10)
        assert r.status_code == 404 and str(server.data_dir) not in r.text and "/console" not in r.text, bad

    # A signed request to / is still S3's ListBuckets.
    set_up_admin(server)
    s3 = boto3.client("s3", endpoint_url=server.url, aws_access_key_id=ADMIN_KEY, aws_secret_access_key=ADMIN_SECRET,
                      region_name="us-east-1", config=BotoConfig(s3={"addressing_style": "path"}))
    assert s3.list_buckets()["Buckets"] == []
    # Query parameters mean an S3 client, not a browser.
    assert requests.get(server.url + "/?list-type=2", headers=html,
                        timeout=10).headers["Content-Type"].startswith("application/xml")


def test_a_wrong_console_dir_stops_the_server(start_server, tmp_path):
    from conftest import run_sediment  # noqa: F401
    cfg = tmp_path / "sediment.toml"
    cfg.write_text(f'[console]\ndir = "{tmp_path}/nothing-here"\n')
    with pytest.raises(RuntimeError) as e:
        start_server("--config", str(cfg))
    assert f"sediment.toml:2: console.dir: {tmp_path}/nothing-here has no index.html" in str(e.value)
