"""The route table, walked (src/server/http/route.h): every row of every API, and every operation of the S3
gateway, is authenticated and authorized exactly as it declares, and a path no row serves is a 404 before
any handler. The rows come from `sediment routes`, so a route added to the table is walked here without
being listed anywhere in the suite."""
import functools

import requests
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from security.util import ADMIN_KEY, ADMIN_SECRET, create_repo, create_user, fill_template, route_table

# What each path parameter, query parameter and body field is filled with.
PARAMS = {"repository": "walk", "branch": "main", "ref": "main", "right": "main", "commit": "c0ffee", "tag": "t1",
          "user": "target-user", "policy": "target-policy", "group": "target-group", "member": "target-user",
          "key": "AKIAWALKWALKWALK", "run": "r1", "hook": "h1", "type": "range", "object": "0" * 64,
          "upload": "u1", "part": "1", "dataset": "walkds", "table": "walktable", "namespace": "walkds",
          "file": "index.html", "rest": "no/such/route", "bucket": "walk", "path": "walk/object",
          # The repositories' Iceberg catalog: namespace walk.main.walkns, scoped or not.
          "prefix": "/lakefs", "scope": "walk.main", "ns": "walk%1Fmain%1Fwalkns", "tbl": "walktable"}
QUERY = {"path": "walk/object", "dest_path": "walk/dest"}
BODY = {"id": "walk-new", "name": "walk-new", "src_path": "walk/src", "source": "main"}
# The repositories' Iceberg catalog's bodies name tables by identifier (its rows derive their resources from them).
WALK_ID = {"namespace": ["walk", "main", "walkns"], "name": "walktable"}
ICEBERG_BODY = {"namespace": WALK_ID["namespace"], "name": "walktable", "schema": {"type": "struct", "fields": []},
                "source": WALK_ID, "destination": dict(WALK_ID, name="walkother"), "metadata-location": "file:///x",
                "table-changes": [{"identifier": WALK_ID, "requirements": [], "updates": []}],
                "requirements": [], "updates": []}
REFUSED = (401, 403)


def fill(template):
    return fill_template(template, PARAMS, QUERY, BODY)


def call_at(server, route, auth=None, base=None):
    method, path = route["method"], fill(route["path"])
    kw = {"params": QUERY, "timeout": 30, "auth": auth}
    if route["protocol"] == "query" and method == "POST":  # the query server: SQL naming a table
        kw.update(data=b"SELECT * FROM walkds.walktable")
    elif route["streamed"]:
        kw.update(data=b"walk", headers={"Content-Type": "application/octet-stream"})
    elif method in ("POST", "PUT", "PATCH"):
        kw["json"] = ICEBERG_BODY if route["protocol"] == "lakefs-iceberg" else BODY
    return requests.request(method, (base or server.url) + path, **kw)


def granted_user(api, name, needs):
    statements = [{"effect": "allow", "action": [n["action"]], "resource": fill(n["resource"])} for n in needs]
    return create_user(api, name, statements)


def refused_for(r, needs):
    """Whether answer `r` refuses one of the permissions `needs` (another refusal is a handler's own check)."""
    return r.status_code in REFUSED and any(n["action"] in r.text for n in needs)


def test_every_row_is_authenticated_and_authorized_as_it_declares(catalog_server):
    server = catalog_server()
    api = server.api
    create_repo(api, "walk", server.namespace("walk"))
    nobody = create_user(api, "walk-nobody")
    table = route_table()
    rows = [(r, server.url) for r in table["routes"] if not r["operation"].endswith(" NotFound")]
    assert len(rows) > 100, "the table is missing rows"
    # The query server's own port ([query] jsonl_listen) is walked too.
    rows += [(r, f"http://127.0.0.1:{server.query_ports['jsonl']}") for r in table["query_port_routes"]]
    failures = []
    for i, (route, base) in enumerate(rows):
        what = f"{route['method']} {base}{route['path']} ({route['operation']})"
        call = functools.partial(call_at, base=base)
        anonymous = call(server, route)
        if route["access"] == "public":
            if anonymous.status_code in REFUSED and route["operation"] not in ("lakefs Login", "iceberg GetToken"):
                failures.append(f"{what}: public, but refused without credentials: {anonymous.status_code}")
            continue
        if anonymous.status_code != 401:
            failures.append(f"{what}: without credentials {anonymous.status_code}, not 401: {anonymous.text[:200]}")
        as_nobody = call(server, route, auth=nobody)
        if route["access"] == "authenticated":
            if as_nobody.status_code in REFUSED:
                failures.append(f"{what}: any user may call it, but one without policies got {as_nobody.status_code}")
            continue
        if not refused_for(as_nobody, route["needs"]):
            failures.append(f"{what}: a user without {route['needs']} got {as_nobody.status_code}: "
                            f"{as_nobody.text[:200]}")
        holder = granted_user(api, f"walk-holder-{i}", route["needs"])
        as_holder = call(server, route, auth=holder)
        if refused_for(as_holder, route["needs"]):
            failures.append(f"{what}: a user holding exactly {route['needs']} was refused: {as_holder.text[:200]}")
    assert not failures, "\n".join(failures)


def test_a_path_no_row_serves_is_404_in_its_api_format(catalog_server):
    server = catalog_server()
    for method in ("GET", "POST", "PUT", "DELETE"):
        r = requests.request(method, server.url + "/api/v1/no/such/route", auth=(ADMIN_KEY, ADMIN_SECRET),
                             timeout=30)
        assert r.status_code == 404, (method, r.status_code, r.text)
        assert "message" in r.json()
        r = requests.request(method, server.url + "/iceberg/v1/no/such/route", timeout=30)
        assert r.status_code == 404, (method, r.status_code, r.text)
        assert r.json()["error"]["code"] == 404
        # Before any handler: even without credentials the answer is the same 404.
        r = requests.request(method, server.url + "/api/v1/repositories/x/no-such-thing", timeout=30)
        assert r.status_code == 404, (method, r.status_code, r.text)


def signed(server, method, url, key, secret, headers):
    req = AWSRequest(method=method, url=url, data=b"", headers=headers)
    req.headers["x-amz-content-sha256"] = "UNSIGNED-PAYLOAD"
    SigV4Auth(Credentials(key, secret), "s3", "us-east-1").add_auth(req)
    return requests.request(method, url, headers=dict(req.headers), timeout=30)


def s3_url(server, op):
    base = {"service": "/", "bucket": "/walk", "object": "/walk/main/walk/object"}[op["level"]]
    query = {}
    if op["query"]:
        query[op["query"]] = "u1" if op["query"] in ("uploadId",) else ("1" if op["query"] == "partNumber" else "")
    if op["query"] == "partNumber":
        query["uploadId"] = "u1"
    q = "&".join(f"{k}={v}" if v else k for k, v in query.items())
    return server.url + base + (f"?{q}" if q else "")


def test_every_s3_operation_is_authorized_as_it_declares(catalog_server):
    server = catalog_server()
    api = server.api
    create_repo(api, "walk", server.namespace("walk"))
    nobody = create_user(api, "walk-nobody")
    failures = []
    for i, op in enumerate(route_table()["s3_operations"]):
        what = f"{op['method']} {op['level']} ?{op['query']} {op['header']} ({op['operation']})"
        headers = {op["header"]: "walk/main/walk/src"} if op["header"] else {}
        url = s3_url(server, op)
        anonymous = requests.request(op["method"], url, headers=headers, timeout=30)
        if anonymous.status_code not in REFUSED:
            failures.append(f"{what}: unsigned got {anonymous.status_code}")
        if op["need"] is None:  # each key is authorized by the handler
            continue
        as_nobody = signed(server, op["method"], url, *nobody, headers)
        # A HEAD answer has no body to name the refusal in.
        named = op["method"] == "HEAD" or ("AccessDenied" in as_nobody.text and op["need"]["action"] in as_nobody.text)
        if not (as_nobody.status_code == 403 and named):
            failures.append(f"{what}: a user without {op['need']} got {as_nobody.status_code}: {as_nobody.text[:200]}")
        holder = granted_user(api, f"walk-s3-holder-{i}", [op["need"]])
        as_holder = signed(server, op["method"], url, *holder, headers)
        if as_holder.status_code == 403 and op["need"]["action"] in as_holder.text:
            failures.append(f"{what}: a user holding exactly {op['need']} was refused: {as_holder.text[:200]}")
    assert not failures, "\n".join(failures)


def test_branch_protection_rules_are_read_with_the_get_permission(catalog_server):
    """The internal listing of branch protection rules is a read: branches:GetBranchProtectionRules, as lakeFS."""
    server = catalog_server()
    api = server.api
    create_repo(api, "walk", server.namespace("walk"))
    arn = "arn:lakefs:fs:::repository/walk"
    getter = create_user(api, "bp-getter", [{"effect": "allow", "action": ["branches:GetBranchProtectionRules"],
                                             "resource": arn}])
    setter = create_user(api, "bp-setter", [{"effect": "allow", "action": ["branches:SetBranchProtectionRules"],
                                             "resource": arn}])
    url = server.url + "/api/v1/repositories/walk/branch_protection"
    assert requests.get(url, auth=getter, timeout=30).status_code == 200
    refused = requests.get(url, auth=setter, timeout=30)
    assert refused.status_code == 401 and "GetBranchProtectionRules" in refused.text, refused.text
