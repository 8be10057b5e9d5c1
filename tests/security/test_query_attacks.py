"""Attacks on the query server (docs/query.md): SQL that reaches for files, settings, other tables or the
server's own paths; oversized and malformed requests on both transports; forged Flight tickets; a
browser's cross-site POST. Each is refused with a clear error, reads nothing, and the server goes on."""
import base64
import json

import pyarrow.flight as flight
import pytest
import requests

from conftest import eventually
from query_util import FlightStream, adbc_query, jsonl, statement_query
from security.util import Api, create_user, set_up_admin

CONFIG = """
[writer.compactor]
min_interval = 0.5
[[jobs]]
dataset = "demo"
history_blocks = 30
block_time = 1.0
txs_per_block = 5
"""


@pytest.fixture
def victim(start_server, tmp_path):
    """A set-up server with the demo tables; `reader` may read demo.logs only."""
    cfg = tmp_path / "q.toml"
    cfg.write_text(CONFIG)
    server = start_server("--config", str(cfg))
    eventually(lambda: all(server.get(f"/api/v1/datasets/demo/tables/{t}/files").json().get("files")
                           for t in ("logs", "transactions")), timeout=30, retry_on=(AssertionError, ValueError))
    set_up_admin(server)
    server.reader = create_user(Api(server), "reader", [
        {"effect": "allow", "action": ["tables:ReadTable"], "resource": "arn:sediment:tables:::demo/logs"}])
    return server


def transactions_file(server):
    r = server.get("/api/v1/datasets/demo/tables/transactions/files", auth=("AKIAIOSFODNN7EXAMPLE",
                                                                          "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"))
    return str(server.data_dir / "objects" / r.json()["files"][0]["path"])


def test_sql_that_reaches_past_the_tables_it_may_read_is_refused(victim):
    other = transactions_file(victim)
    attacks = [
        f"SELECT * FROM read_parquet('{other}')",  # a table the reader may not read, by its file
        f"SELECT * FROM '{other}'",
        f"SELECT * FROM demo.logs, '{other}'",
        "SELECT * FROM read_text('/etc/passwd')",
        "SELECT * FROM read_blob('/etc/passwd')",
        "SELECT * FROM glob('/*')",
        "SELECT * FROM query_table('demo.transactions')",
        "SELECT * FROM query('SELECT * FROM demo.transactions')",
        "SELECT * FROM demo.logs, duckdb_views",  # the views' definitions name the server's paths
        "SELECT sql FROM sqlite_master",
        "WITH X AS (SELECT 1) SELECT * FROM (WITH duckdb_views AS (SELECT 1) SELECT 1), duckdb_views",
        "SELECT * FROM main.demo.logs",
        "SELECT * FROM demo.logs AT (VERSION => 1)",
        "COPY demo.logs TO '/tmp/stolen.csv'",
        "ATTACH '/tmp/x.db' AS x",
        "INSTALL httpfs",
        "LOAD httpfs",
        "SET enable_external_access = true",
        "PRAGMA database_list",
        "CALL pragma_version()",
        "CREATE TABLE demo.t AS SELECT 1",
        "SELECT 1; SELECT * FROM demo.transactions",
        "SELECT getenv('HOME')",
    ]
    for sql in attacks:
        r = jsonl(victim, sql, auth=victim.reader)
        assert r.status_code in (400, 403, 404), (sql, r.status_code, r.text)
        body = r.json()  # one error object: no row came back
        assert set(body) == {"error_code", "error_message"} and body["error_message"], sql
    assert not __import__("os").path.exists("/tmp/stolen.csv")
    # The reader's own table still answers, and the settings it cannot change hold.
    rows = jsonl(victim, "SELECT current_setting('enable_external_access') AS e", auth=victim.reader)
    assert rows.status_code == 403, "a query naming no table needs every table's permission"
    assert jsonl(victim, "SELECT count(*) FROM demo.logs", auth=victim.reader).status_code == 200


def test_oversized_and_malformed_requests(victim):
    big = "SELECT 1 " + " " * (2 << 20)
    r = jsonl(victim, big, auth=victim.reader)
    assert r.status_code == 413, r.status_code
    r = jsonl(victim, "SELECT count(*) FROM demo.logs", auth=victim.reader,
              headers={"amp-stream": "true", "amp-resume": "[" * 1000})
    assert r.status_code == 400 and "amp-resume" in r.json()["error_message"]
    r = jsonl(victim, "SELECT count(*) FROM demo.logs", auth=victim.reader,
              headers={"amp-stream": "true", "amp-resume": "[" * 100000})
    assert r.status_code == 431, "a header past the server's limit is refused before any handler"
    r = jsonl(victim, "SELECT block_num FROM demo.logs", auth=victim.reader,
              headers={"amp-stream": "true", "amp-resume": json.dumps({"demo": {"number": -1, "hash": "0x00"}})})
    assert r.status_code == 400
    r = jsonl(victim, "SELECT block_num FROM demo.logs", auth=victim.reader,
              headers={"amp-stream": "true", "amp-resume": json.dumps({"other": {"number": 1, "hash": "0x00"}})})
    assert r.status_code == 400 and "demo" in r.json()["error_message"]
    r = jsonl(victim, b"SELECT '\xff\xfe'".decode("latin-1"), auth=victim.reader)
    assert r.status_code in (400, 403)


def flight_client(server, auth):
    client = flight.FlightClient(f"grpc://127.0.0.1:{server.query_ports['flight']}")
    basic = base64.b64encode(f"{auth[0]}:{auth[1]}".encode())
    return client, flight.FlightCallOptions(headers=[(b"authorization", b"Basic " + basic)])


def test_flight_refuses_what_is_not_a_statement_of_a_caller_allowed_to_run_it(victim):
    client, options = flight_client(victim, victim.reader)
    for descriptor, words in [
        (flight.FlightDescriptor.for_path("demo", "logs"), "UNSUPPORTED_FLIGHT_DESCRIPTOR_TYPE"),
        (flight.FlightDescriptor.for_command(b"\xff\xff\xff"), "PB_DECODE_ERROR"),
        (flight.FlightDescriptor.for_command(b"\x0a\x05hello"), "UNSUPPORTED_FLIGHT_DESCRIPTOR_COMMAND"),
        (flight.FlightDescriptor.for_command(statement_query("SELECT 1" + " " * (2 << 20))), "max_body_bytes"),
        (flight.FlightDescriptor.for_command(statement_query("SELECT * FROM demo.transactions")), "tables:ReadTable"),
    ]:
        with pytest.raises(Exception, match=words):
            client.get_flight_info(descriptor, options)
    # Unauthenticated, and with a wrong secret.
    anonymous = flight.FlightClient(f"grpc://127.0.0.1:{victim.query_ports['flight']}")
    with pytest.raises(flight.FlightUnauthenticatedError):
        anonymous.get_flight_info(flight.FlightDescriptor.for_command(statement_query("SELECT 1")))
    with pytest.raises(Exception, match="(?i)unauthenticated|invalid access key"):
        adbc_query(victim, "SELECT count(*) FROM demo.logs", auth=(victim.reader[0], "wrong"))
    # A ticket is no capability: a forged one for a table the caller may not read is refused at DoGet.
    forged = flight.Ticket(json.dumps({"v": 1, "sql": "SELECT * FROM demo.transactions", "stream": False,
                                       "resume": ""}).encode())
    with pytest.raises(Exception, match="tables:ReadTable"):
        client.do_get(forged, options).read_all()
    with pytest.raises(Exception, match="TICKET_DECODING_ERROR"):
        client.do_get(flight.Ticket(b"not a ticket"), options).read_all()
    with pytest.raises(Exception):
        FlightStream(victim, "SELECT block_num FROM demo.transactions", auth=victim.reader)
    # And the server still answers its reader.
    assert adbc_query(victim, "SELECT count(*) AS n FROM demo.logs", auth=victim.reader).num_rows == 1


def test_a_cross_site_post_with_the_console_cookie_runs_nothing(victim):
    login = requests.post(victim.url + "/api/v1/auth/login", timeout=30, json={
        "access_key_id": "AKIAIOSFODNN7EXAMPLE", "secret_access_key": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"})
    assert login.status_code == 200, login.text
    cookie = login.cookies.get("internal_auth_session")
    assert cookie
    # A form on another site can POST text/plain with the cookie, but cannot add X-Requested-With.
    r = requests.post(victim.url + "/api/v1/query", data=b"SELECT count(*) FROM demo.logs", timeout=30,
                      headers={"Content-Type": "text/plain"}, cookies={"internal_auth_session": cookie})
    assert r.status_code == 401, r.text
    r = requests.post(victim.url + "/api/v1/query", data=b"SELECT count(*) FROM demo.logs", timeout=30,
                      headers={"X-Requested-With": "XMLHttpRequest"}, cookies={"internal_auth_session": cookie})
    assert r.status_code == 200, r.text
