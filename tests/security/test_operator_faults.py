"""Two faults an operator meets (issue 25): servers started together on a fresh PostgreSQL schema, and a
storage fault that must be answered as the server's fault, not as a missing table."""
import os
import shutil
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from conftest import eventually
from tables_util import append, ipc

T = "/api/v1/datasets/eth/tables/logs"


def test_a_lost_objects_directory_is_a_server_fault_not_a_missing_table(start_server):
    server = start_server()  # the tables API is open before the catalog is set up
    assert server.put(T, data=ipc()).status_code == 201
    assert append(server, "logs", 1, 2).status_code == 201
    # The append's Iceberg snapshot is written in the background: let it land before the directory goes.
    eventually(lambda: "iceberg_snapshots_published_total 1" in server.get("/metrics").text,
               what="the append's snapshot")
    objects = server.data_dir / "objects"
    assert objects.is_dir()
    shutil.rmtree(objects)
    r = append(server, "logs", 3, 4)
    assert r.status_code in (500, 503), (r.status_code, r.text)
    assert server.get(T).status_code == 200, "the table is still there"
    assert server.proc.poll() is None


def test_servers_started_together_on_a_fresh_schema_all_start(start_server, tmp_path):
    dsn = os.environ.get("SEDIMENT_TEST_POSTGRES_DSN")
    if not dsn:
        pytest.skip("no PostgreSQL configured (scripts/test.sh starts one)")
    for round_ in range(10):  # the window is small: psql alone hits it in about 1 of 7 rounds of 4
        cfg = tmp_path / f"pg{round_}.toml"
        cfg.write_text(f'[database]\ntype = "postgres"\npostgres_dsn = "{dsn}"\n'
                       f'postgres_schema = "race_{uuid.uuid4().hex[:12]}"\n')

        def start(i, cfg=cfg, round_=round_):
            began = time.monotonic()
            try:
                server = start_server("--config", str(cfg), data_dir=tmp_path / f"r{round_}s{i}")
            except RuntimeError as e:  # exited during start-up: its output says why
                server = str(e)
            return server, began, time.monotonic()

        with ThreadPoolExecutor(4) as pool:
            results = list(pool.map(start, range(4)))
        failed = [s for s, _, _ in results if isinstance(s, str)]
        assert not failed, "\n\n".join(failed)
        # The race happened: every start-up (and so its schema creation) overlapped every other.
        assert max(b for _, b, _ in results) < min(e for _, _, e in results), results
        for s, _, _ in results:
            assert "duplicate key" not in s.output(), s.output()
            assert requests.get(s.url + "/api/v1/healthcheck", timeout=30).status_code == 204
            s.stop()
