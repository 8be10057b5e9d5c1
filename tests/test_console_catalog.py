"""The console's catalog pages (console/catalog.js) in headless Chromium against a real server:
repositories, the object browser (upload, prefixes, paging, preview, download), commits and their
diffs, branches (create, bad names, staging compaction), compare and merge (with a conflict), tags.
Bulk state is set up through the API with requests; every check of what the server holds is made
through the API too, not through the page under test."""

import pytest
import requests
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.common.by import By

from conftest import ADMIN, ADMIN_KEY, ADMIN_SECRET, eventually, set_up_admin

from console_util import ON_PAGE, browser, shot, wait_for, login  # noqa: F401


class Catalog:
    """The server under test, through its lakeFS API."""

    def __init__(self, server, tmp_path):
        self.server = server
        self.url = server.url
        self.tmp_path = tmp_path

    def call(self, method, path, **kw):
        return requests.request(method, self.url + "/api/v1" + path, auth=ADMIN, timeout=30, **kw)

    def ok(self, method, path, **kw):
        r = self.call(method, path, **kw)
        assert r.ok, f"{method} {path}: {r.status_code} {r.text}"
        return r.json() if r.content and r.headers.get("Content-Type", "").startswith("application/json") else r.text

    def make_repo(self, name="repo1"):
        return self.ok("POST", "/repositories", json={
            "name": name, "storage_namespace": f"local://{self.tmp_path}/{name}", "default_branch": "main"})

    def upload(self, path, data, branch="main", repo="repo1"):
        self.ok("POST", f"/repositories/{repo}/branches/{branch}/objects", params={"path": path}, data=data)

    def commit(self, message, branch="main", repo="repo1"):
        return self.ok("POST", f"/repositories/{repo}/branches/{branch}/commits", json={"message": message})

    def read(self, path, ref="main", repo="repo1"):
        r = self.call("GET", f"/repositories/{repo}/refs/{ref}/objects", params={"path": path})
        assert r.status_code == 200, r.text
        return r.content

    def log(self, ref="main", repo="repo1"):
        return self.ok("GET", f"/repositories/{repo}/refs/{ref}/commits")["results"]

    def repos(self):
        return [r["id"] for r in self.ok("GET", "/repositories")["results"]]

    def branches(self, repo="repo1"):
        return [b["id"] for b in self.ok("GET", f"/repositories/{repo}/branches")["results"]]

    def compaction(self, branch, repo="repo1"):
        return self.ok("GET", f"/repositories/{repo}/branches/{branch}/compact")


@pytest.fixture
def catalog(start_server, tmp_path):
    cfg = tmp_path / "sediment.toml"
    cfg.write_text(f'[catalog]\nlocal_namespace_roots = ["{tmp_path}"]\n')
    server = start_server("--config", str(cfg))
    assert requests.get(server.url + "/api/v1/setup_lakefs", timeout=10).json()["state"] == "not_initialized"
    set_up_admin(server)
    return Catalog(server, tmp_path)


# --- browser helpers ---------------------------------------------------------

def goto(driver, hash_):
    """Moves the console to a page (a hash change, as a click on a link would)."""
    driver.execute_script("location.hash = arguments[0]", hash_)


def click(driver, css, text=None, timeout=20):
    """Clicks the first matching element, retrying when the page re-rendered under it."""
    def clicked():
        wait_for(driver, css, timeout=timeout, text=text).click()
        return True
    # Stale or not yet clickable: again (an element that never came fails inside wait_for).
    eventually(clicked, timeout=timeout, interval=0.1, what=f"a click on {css!r}", retry_on=(WebDriverException,))


def fill(driver, css, value):
    el = wait_for(driver, css)
    el.clear()
    el.send_keys(value)
    return el


def texts(driver, css):
    return [e.text for e in driver.find_elements(By.CSS_SELECTOR, css)]


def row_paths(driver, table_id):
    return [e.get_attribute("data-path") for e in driver.find_elements(By.CSS_SELECTOR, f"#{table_id} tr[data-path]")]


def dialog_gone(driver, dialog_id):
    eventually(lambda: not driver.find_elements(By.ID, dialog_id), timeout=20, what=f"dialog {dialog_id} closed",
               **ON_PAGE)


def open_console(driver, catalog):
    login(driver, catalog.url, ADMIN_KEY, ADMIN_SECRET)


# --- tests -------------------------------------------------------------------

def test_repositories_objects_and_commits(catalog, browser, tmp_path):
    d = browser
    open_console(d, catalog)
    goto(d, "#/repositories")
    wait_for(d, "#no-repositories")
    shot(d, "catalog-01-no-repositories")

    # Create a repository through the dialog: the namespace follows the typed name.
    click(d, "#create-repo")
    fill(d, "#create-repo-dialog-name", "repo1")
    ns = d.find_element(By.ID, "create-repo-dialog-storage_namespace").get_attribute("value")
    assert ns == f"local://{tmp_path}/repo1"
    assert d.find_element(By.ID, "create-repo-dialog-default_branch").get_attribute("value") == "main"
    shot(d, "catalog-02-create-repo-dialog")
    click(d, "#create-repo-dialog-submit")
    wait_for(d, "#repo-name", text="repo1")
    wait_for(d, "a#tab-objects.active")
    repo = catalog.ok("GET", "/repositories/repo1")
    assert repo["default_branch"] == "main" and repo["storage_namespace"] == ns

    # A bad name: the server's message in the dialog, nothing created.
    goto(d, "#/repositories")
    wait_for(d, "#repositories a.repo-link", text="repo1")
    click(d, "#create-repo")
    fill(d, "#create-repo-dialog-name", "Bad_Name")
    click(d, "#create-repo-dialog-submit")
    err = wait_for(d, "#create-repo-dialog-error")
    assert "invalid repository name" in err.text and "Bad_Name" in err.text
    assert d.find_element(By.ID, "create-repo-dialog").is_displayed()
    shot(d, "catalog-03-bad-repo-name")
    assert catalog.repos() == ["repo1"]
    click(d, "#create-repo-dialog button[type=button]")  # Cancel
    dialog_gone(d, "create-repo-dialog")
    assert texts(d, "#repositories a.repo-link") == ["repo1"]

    # Bulk state through the API: 105 objects under data/ (two pages of 100), one binary object.
    for i in range(105):
        catalog.upload(f"data/f{i:03d}.txt", f"line {i}\nof object {i}\n".encode())
    catalog.upload("blob.bin", bytes(range(256)) * 4)

    # Upload through the form: the path is prefilled with prefix + file name.
    local = tmp_path / "local"
    local.mkdir()
    (local / "hello.txt").write_text("hello from the browser\n")
    click(d, "#repositories a.repo-link", text="repo1")
    wait_for(d, "#objects tr[data-path='data/']")
    assert row_paths(d, "objects") == ["blob.bin", "data/"]
    d.find_element(By.ID, "upload-file").send_keys(str(local / "hello.txt"))
    assert d.find_element(By.ID, "upload-path").get_attribute("value") == "hello.txt"
    click(d, "#upload-submit")
    wait_for(d, "#upload-result", text="hello.txt")
    wait_for(d, "#objects tr[data-path='hello.txt']")
    assert catalog.read("hello.txt") == b"hello from the browser\n"
    # Uncommitted changes list it: 107 of them, on two pages of 100.
    wait_for(d, "#changes tr[data-path='blob.bin'][data-type='added']")
    assert len(row_paths(d, "changes")) == 100
    click(d, "#changes-next")
    wait_for(d, "#changes tr[data-path='hello.txt'][data-type='added']")
    assert len(row_paths(d, "changes")) == 7
    shot(d, "catalog-04-uploaded")

    # Preview: text, and binary.
    click(d, "#objects tr[data-path='hello.txt'] button.preview")
    assert wait_for(d, "pre#preview").text == "hello from the browser"
    click(d, "#objects tr[data-path='blob.bin'] button.preview")
    wait_for(d, "#preview.binary", text="binary")
    assert "1,024 bytes" in d.find_element(By.ID, "preview").text
    assert not d.find_elements(By.CSS_SELECTOR, "pre#preview")

    # Download: the object's bytes land in a file.
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    d.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)})
    click(d, "#objects tr[data-path='hello.txt'] button.download")
    got = eventually(lambda: (downloads / "hello.txt").exists() and (downloads / "hello.txt").read_bytes(),
                     timeout=20, what="the downloaded file", **ON_PAGE)
    assert got == b"hello from the browser\n"

    # Into the prefix, and page through it with next/previous.
    click(d, "#objects tr[data-path='data/'] a.prefix-link")
    wait_for(d, "#objects tr[data-path='data/f000.txt']")
    assert row_paths(d, "objects") == [f"data/f{i:03d}.txt" for i in range(100)]
    assert "data" in wait_for(d, "#crumbs").text
    assert d.find_element(By.ID, "prev-page").get_attribute("disabled") is not None
    assert d.find_element(By.ID, "upload-path").get_attribute("value") == "data/"
    shot(d, "catalog-05-prefix-page-1")
    click(d, "#next-page")
    wait_for(d, "#objects tr[data-path='data/f100.txt']")
    assert row_paths(d, "objects") == [f"data/f{i:03d}.txt" for i in range(100, 105)]
    assert d.find_element(By.ID, "next-page").get_attribute("disabled") is not None
    shot(d, "catalog-06-prefix-page-2")
    click(d, "#prev-page")
    wait_for(d, "#objects tr[data-path='data/f000.txt']")
    assert len(row_paths(d, "objects")) == 100
    click(d, "#objects tr[data-path='data/f003.txt'] button.preview")
    assert wait_for(d, "pre#preview").text == "line 3\nof object 3"
    shot(d, "catalog-07-preview")

    # Commit through the dialog.
    click(d, "#commit")
    fill(d, "#commit-dialog-message", "first batch")
    shot(d, "catalog-08-commit-dialog")
    click(d, "#commit-dialog-submit")
    wait_for(d, "#commit-result", text="first batch")
    wait_for(d, "#no-changes")
    head = catalog.log()[0]
    assert head["message"] == "first batch" and head["committer"] == "admin"
    assert catalog.ok("GET", "/repositories/repo1/branches/main/diff")["results"] == []
    shot(d, "catalog-09-committed")

    # The log shows it; its diff against its parent lists what it added.
    click(d, "a#tab-commits")
    row = wait_for(d, f"#commits tr[data-commit='{head['id']}']")
    assert "first batch" in row.text
    assert texts(d, "#commits .commit-message") == ["first batch", "Repository created"]
    row.click()
    wait_for(d, "#commit-detail-id", text=head["id"])
    wait_for(d, "#commit-diff tr[data-path='blob.bin'][data-type='added']")
    assert row_paths(d, "commit-diff") == ["blob.bin"] + [f"data/f{i:03d}.txt" for i in range(99)]
    # 107 changes: the diff pages too.
    click(d, "#commit-diff-next")
    wait_for(d, "#commit-diff tr[data-path='hello.txt'][data-type='added']")
    assert row_paths(d, "commit-diff") == [f"data/f{i:03d}.txt" for i in range(99, 105)] + ["hello.txt"]
    shot(d, "catalog-10-commit-log")


def test_branches_compare_merge_and_conflict(catalog, browser, tmp_path):
    d = browser
    catalog.make_repo()
    catalog.upload("hello.txt", b"v1\n")
    catalog.upload("other.txt", b"other\n")
    catalog.commit("base")
    open_console(d, catalog)

    # Create a branch through the dialog; a bad name shows the server's message and creates nothing.
    goto(d, "#/repositories/repo1/branches")
    wait_for(d, "#branches tr[data-branch='main']")
    click(d, "#create-branch")
    fill(d, "#create-branch-dialog-name", "feature")
    assert d.find_element(By.ID, "create-branch-dialog-source").get_attribute("value") == "main"
    click(d, "#create-branch-dialog-submit")
    wait_for(d, "#branches tr[data-branch='feature']")
    wait_for(d, "#create-branch-result", text="feature")
    dialog_gone(d, "create-branch-dialog")
    assert catalog.branches() == ["feature", "main"]
    click(d, "#create-branch")
    fill(d, "#create-branch-dialog-name", "bad name!")
    click(d, "#create-branch-dialog-submit")
    err = wait_for(d, "#create-branch-dialog-error")
    assert "invalid branch name" in err.text and "bad name!" in err.text
    shot(d, "catalog-11-bad-branch-name")
    assert catalog.branches() == ["feature", "main"]
    click(d, "#create-branch-dialog button[type=button]")
    dialog_gone(d, "create-branch-dialog")

    # Change a file on the branch through the form, commit it through the dialog.
    click(d, "#branches tr[data-branch='feature'] a.branch-link")
    wait_for(d, "#objects tr[data-path='hello.txt']")
    assert d.find_element(By.ID, "ref").get_attribute("value") == "feature"
    local = tmp_path / "v2"
    local.mkdir()
    (local / "hello.txt").write_bytes(b"v2 from feature\n")
    d.find_element(By.ID, "upload-file").send_keys(str(local / "hello.txt"))
    click(d, "#upload-submit")
    wait_for(d, "#changes tr[data-path='hello.txt'][data-type='changed']")
    click(d, "#commit")
    fill(d, "#commit-dialog-message", "change hello")
    click(d, "#commit-dialog-submit")
    wait_for(d, "#commit-result", text="change hello")
    assert catalog.log("feature")[0]["message"] == "change hello"
    assert catalog.read("hello.txt", "main") == b"v1\n"

    # A ref that does not exist: the server's message, and no merge button.
    click(d, "a#tab-compare")
    fill(d, "#left-ref", "main")
    fill(d, "#right-ref", "no-such-branch")
    click(d, "#compare-submit")
    assert "not found" in wait_for(d, "#compare-error").text
    assert not d.find_elements(By.CSS_SELECTOR, "#merge")

    # Compare main...feature: the change.
    fill(d, "#left-ref", "main")
    fill(d, "#right-ref", "feature")
    click(d, "#compare-submit")
    wait_for(d, "#diff tr[data-path='hello.txt'][data-type='changed']")
    assert row_paths(d, "diff") == ["hello.txt"]
    shot(d, "catalog-12-compare")

    # Merge through the dialog: main has the change.
    click(d, "#merge", text="Merge feature into main")
    wait_for(d, "#merge-dialog-strategy")
    shot(d, "catalog-13-merge-dialog")
    click(d, "#merge-dialog-submit")
    result = wait_for(d, "#merge-result")
    main_head = catalog.log("main")[0]
    assert main_head["id"] in result.text
    assert catalog.read("hello.txt", "main") == b"v2 from feature\n"
    wait_for(d, "#no-diff")
    shot(d, "catalog-14-merged")

    # A conflict: the same path changed on both sides. The dialog shows the server's message; main is unchanged.
    catalog.upload("other.txt", b"main's version\n", branch="main")
    catalog.commit("other on main", branch="main")
    catalog.upload("other.txt", b"feature's version\n", branch="feature")
    catalog.commit("other on feature", branch="feature")
    before = catalog.log("main")[0]["id"]
    click(d, "#compare-submit")
    wait_for(d, "#diff tr[data-path='other.txt']")
    click(d, "#merge")
    click(d, "#merge-dialog-submit")
    err = wait_for(d, "#merge-dialog-error")
    assert "conflict" in err.text and "other.txt" in err.text
    shot(d, "catalog-15-merge-conflict")
    assert catalog.log("main")[0]["id"] == before
    assert catalog.read("other.txt", "main") == b"main's version\n"
    # dest-wins resolves it, keeping main's side.
    d.find_element(By.CSS_SELECTOR, "#merge-dialog-strategy option[value='dest-wins']").click()
    click(d, "#merge-dialog-submit")
    wait_for(d, "#merge-result")
    dialog_gone(d, "merge-dialog")
    assert catalog.log("main")[0]["id"] != before
    assert catalog.read("other.txt", "main") == b"main's version\n"


def test_compaction_and_tags(catalog, browser):
    d = browser
    catalog.make_repo()
    catalog.upload("a.txt", b"a\n")
    catalog.commit("base")
    catalog.ok("POST", "/repositories/repo1/branches", json={"name": "side", "source": "main"})
    for i in range(20):
        catalog.upload(f"staged/{i:02d}", f"{i}".encode(), branch="side")
    # The server counts staged mutations in memory and flushes them every second.
    eventually(lambda: catalog.compaction("side")["staged_mutations"] >= 20, timeout=20, what="the staged count",
               **ON_PAGE)
    assert catalog.compaction("side")["compacted"] is False
    open_console(d, catalog)

    goto(d, "#/repositories/repo1/branches")
    row = "#branches tr[data-branch='side']"
    wait_for(d, f"{row} .staged", text="20")
    wait_for(d, f"{row} .compaction-state", text="never compacted")
    # The write main's commit took is not staged any more.
    assert catalog.compaction("main")["staged_mutations"] == 0
    wait_for(d, "#branches tr[data-branch='main'] .staged", text="0")
    shot(d, "catalog-16-branches-before-compaction")
    click(d, f"{row} .compact-now")
    wait_for(d, f"{row} .compaction-state", text="completed", timeout=35)
    assert wait_for(d, f"{row} .staged").text == "0"
    assert "staging compacted" in d.find_element(By.CSS_SELECTOR, f"{row} .compaction-state").text
    shot(d, "catalog-17-compacted")
    c = catalog.compaction("side")
    assert c["compacted"] is True and c["last_compaction"]["state"] == "completed" and c["staged_mutations"] == 0
    # Compaction keeps the writes staged, not committed.
    assert len(catalog.ok("GET", "/repositories/repo1/branches/side/diff")["results"]) == 20

    # Tags: create through the dialog; a tag is browsable but takes no uploads or commits.
    click(d, "a#tab-tags")
    wait_for(d, "#no-tags")
    click(d, "#create-tag")
    fill(d, "#create-tag-dialog-id", "v1")
    assert d.find_element(By.ID, "create-tag-dialog-ref").get_attribute("value") == "main"
    click(d, "#create-tag-dialog-submit")
    wait_for(d, "#tags tr[data-tag='v1']")
    tag = catalog.ok("GET", "/repositories/repo1/tags/v1")
    assert tag["commit_id"] == catalog.log("main")[0]["id"]
    assert tag["commit_id"][:12] in d.find_element(By.CSS_SELECTOR, "#tags tr[data-tag='v1']").text
    shot(d, "catalog-18-tag")
    click(d, "#create-tag")
    fill(d, "#create-tag-dialog-id", "v1")
    click(d, "#create-tag-dialog-submit")
    wait_for(d, "#create-tag-dialog-error")
    click(d, "#create-tag-dialog button[type=button]")
    click(d, "#tags tr[data-tag='v1'] a.tag-link")
    wait_for(d, "#objects tr[data-path='a.txt']")
    wait_for(d, "#read-only-ref", text="not a branch")
    assert not d.find_elements(By.ID, "upload-file") and not d.find_elements(By.ID, "commit")
    shot(d, "catalog-19-tag-objects")
    # Delete it, confirming.
    goto(d, "#/repositories/repo1/tags")
    click(d, "#tags tr[data-tag='v1'] button.delete-tag")
    d.switch_to.alert.accept()
    wait_for(d, "#no-tags")
    assert catalog.call("GET", "/repositories/repo1/tags/v1").status_code == 404


def test_catalog_needs_set_up_first(start_server, browser, tmp_path):
    d = browser
    cfg = tmp_path / "sediment.toml"
    cfg.write_text(f'[catalog]\nlocal_namespace_roots = ["{tmp_path}"]\n')
    server = start_server("--config", str(cfg))
    d.get(server.url + "/#/repositories")
    wait_for(d, "#setup-needed", text="not set up")
    assert not d.find_elements(By.ID, "create-repo")
    shot(d, "catalog-20-needs-setup")
    click(d, "#setup-submit")
    key = wait_for(d, "#setup-key").text
    secret = d.find_element(By.ID, "setup-secret").text
    assert requests.get(server.url + "/api/v1/setup_lakefs", timeout=10).json()["state"] == "initialized"
    click(d, "#setup-done a")
    wait_for(d, "#no-repositories")
    click(d, "#create-repo")
    # The namespace example comes from the server's storage config, under its allowed root.
    eventually(lambda: d.find_element(By.ID, "create-repo-dialog-storage_namespace").get_attribute("value")
               == f"local://{tmp_path}/repo", timeout=20, what="the namespace example", **ON_PAGE)
    assert requests.get(server.url + "/api/v1/repositories", auth=(key, secret), timeout=10).json()["results"] == []


def test_action_runs_and_hook_output(catalog, browser):
    """The Actions tab lists the runs of the repository's hooks, newest first, with each hook's status
    and output; a failed pre-commit hook shows why the commit was refused."""
    d = browser
    catalog.make_repo()
    action = ("name: Guard\non: {pre-commit: }\nhooks:\n"
              "  - {id: check, type: lua, properties: {script: \"print('checked ' .. action.branch_id)\"}}\n"
              "  - {id: veto, type: lua, properties: {script: \"if action.commit.message == 'bad' then error('no bad commits') end\"}}\n")
    catalog.upload("_lakefs_actions/guard.yaml", action.encode())
    catalog.commit("good")
    catalog.upload("x", b"x")
    r = catalog.call("POST", "/repositories/repo1/branches/main/commits", json={"message": "bad"})
    assert r.status_code == 412 and "no bad commits" in r.json()["message"], r.text
    runs = catalog.ok("GET", "/repositories/repo1/actions/runs")["results"]
    assert [x["status"] for x in runs] == ["failed", "completed"]
    open_console(d, catalog)
    goto(d, "#/repositories/repo1/actions")
    failed = f"#runs tr[data-run='{runs[0]['run_id']}']"
    wait_for(d, failed, text="failed")
    click(d, failed)
    wait_for(d, "#run-hooks tr[data-hook='0000_0001']", text="failed")
    wait_for(d, "#hook-output-0000_0000", text="checked main")
    click(d, "#run-hooks tr[data-hook='0000_0001']")
    wait_for(d, "#hook-output-0000_0001", text="no bad commits")
    shot(d, "catalog-20-action-runs")
