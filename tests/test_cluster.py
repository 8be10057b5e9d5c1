"""Many servers sharing one PostgreSQL and one MinIO (docs/deploy.md): writes through any server are
visible through every other; tables are compacted by one server at a time and another takes over when
it is killed; the staged-mutation counter is shared; a PostgreSQL outage gives 503s and loses nothing."""
import os
import signal
import subprocess
import tempfile
import threading
import uuid
from pathlib import Path

import lakefs_sdk
import pytest
import requests
from lakefs_sdk import models as m
from lakefs_sdk.client import LakeFSClient

from conftest import eventually, ROOT, s3_settings, set_up_admin
from tables_util import append, ipc

KEY, SECRET = "AKIACLUSTER", "cluster-secret-key"
T = "/api/v1/datasets/eth/tables/logs"

CLUSTER = """
[writer]
bytes = 60000
[writer.compactor]
skip_latest_segments = 0
max_eager_bytes = 0
cooldown_duration = 0
min_interval = 1
gc_manifest_grace_period = 3600
lease_ttl = 3
[graveler.compaction]
auto_trigger = true
threshold = 30
"""


def shared_settings():
    dsn = os.environ.get("SEDIMENT_TEST_POSTGRES_DSN")
    s3 = s3_settings(f"cluster-{uuid.uuid4().hex[:12]}")
    if not dsn or not s3:
        pytest.skip("needs MinIO and PostgreSQL (scripts/test.sh starts both)")
    return s3 + (f'[database]\ntype = "postgres"\npostgres_dsn = "{dsn}"\n'
                 f'postgres_schema = "c_{uuid.uuid4().hex[:12]}"\n')


@pytest.fixture
def cluster(start_server, tmp_path):
    settings = shared_settings()
    cfg = tmp_path / "cluster.toml"
    cfg.write_text(CLUSTER + settings)
    servers = [start_server("--config", str(cfg), data_dir=tmp_path / f"server{i}") for i in range(3)]
    bucket_prefix = settings.split('objects = "')[1].split('"')[0]
    return servers, bucket_prefix


def sdk(server):
    return LakeFSClient(lakefs_sdk.Configuration(host=server.url + "/api/v1", username=KEY, password=SECRET))


def test_catalog_writes_are_visible_through_every_server(cluster):
    servers, prefix = cluster
    a, b, c = servers
    set_up_admin(a, KEY, SECRET)
    ca, cb, cc = sdk(a), sdk(b), sdk(c)
    ca.repositories_api.create_repository(m.RepositoryCreation(name="shared", storage_namespace=prefix + "/shared"))
    cb.objects_api.upload_object("shared", "main", "x/one", content=b"through b")
    assert bytes(cc.objects_api.get_object("shared", "main", "x/one")) == b"through b"
    assert [o.path for o in ca.objects_api.list_objects("shared", "main").results] == ["x/one"]
    commit = cc.commits_api.commit("shared", "main", m.CommitCreation(message="from c"))
    assert ca.refs_api.log_commits("shared", "main").results[0].id == commit.id
    cb.branches_api.create_branch("shared", m.BranchCreation(name="dev", source="main"))
    assert ca.branches_api.get_branch("shared", "dev").commit_id == commit.id

    # The staged-mutation count is shared: 20 writes through a and 20 through b cross the threshold of 30
    # only together, and one server compacts the branch.
    for i in range(20):
        ca.objects_api.upload_object("shared", "dev", f"a/{i:03d}", content=b"a")
        cb.objects_api.upload_object("shared", "dev", f"b/{i:03d}", content=b"b")
    def compacted():
        status = requests.get(c.url + "/api/v1/repositories/shared/branches/dev/compact", auth=(KEY, SECRET),
                              timeout=10).json()
        return status if status["compacted"] else None
    eventually(compacted, timeout=30, what="one server to compact the shared branch")
    listed = [o.path for o in cc.objects_api.list_objects("shared", "dev", amount=1000).results]
    assert len(listed) == 41
    completed = sum(s.get("/metrics").text.count('graveler_compaction_seconds_count{outcome="completed"} 1')
                    for s in servers)
    assert completed == 1, "exactly one server ran the compaction"


def holder_of(servers):
    """The server holding the table's compaction lease, found from the 503 the others answer."""
    for s in servers:
        r = s.post(T + "/compact")
        if r.status_code == 503:
            for other in servers:  # a server's name in leases is kept in its data directory
                if f"({(other.data_dir / 'server-id').read_text().strip()})" in r.json()["message"]:
                    return other
    return None


def test_sigkill_of_the_table_lease_holder_loses_nothing(cluster):
    servers, _ = cluster
    a, b, _c = servers
    assert a.put(T, data=ipc()).status_code == 201
    block = 0
    for i in range(30):
        s = servers[i % 2]
        assert append(s, "logs", block, block + 4, per_block=20).status_code == 201, i
        block += 5
    holder = eventually(lambda: holder_of(servers), timeout=20, what="some server to hold the lease")
    holder.proc.send_signal(signal.SIGKILL)
    holder.proc.wait(10)
    survivors = [s for s in servers if s is not holder]
    kill_block = block
    for i in range(20):
        assert append(survivors[i % 2], "logs", block, block + 4, per_block=20).status_code == 201
        block += 5
    # Another server takes the lease over after lease_ttl (3 s) and merges what is left.
    # Every segment written after the kill gets merged (one trailing small file may stay alone).
    def merged():
        files = survivors[0].get(T + "/files").json()["files"]
        unmerged = [f for f in files if f["end_block"] >= kill_block and f["generation"] == 0]
        assert len(unmerged) <= 1, f"{len(unmerged)} segments left unmerged"
        return True
    eventually(merged, timeout=40, what="the survivors to merge what was written after the kill")
    assert holder_of(survivors) is not holder
    d = survivors[1].get(T).json()
    assert (d["rows"], d["first_block"], d["last_block"]) == (block * 20, 0, block - 1)
    r = survivors[1].get(T + "/scan", params={"columns": "block_num", "format": "jsonl"})
    assert r.status_code == 200
    import json
    blocks = [json.loads(line)["block_num"] for line in r.text.splitlines() if line]
    assert sorted(blocks) == [b for b in range(block) for _ in range(20)], "no block missing or doubled"


@pytest.fixture
def own_postgres():
    """A throwaway PostgreSQL of this test's own, so stopping it disturbs no other test."""
    d = tempfile.mkdtemp(prefix="sediment-pg-")
    os.chmod(d, 0o755)
    script = ROOT / "scripts" / "postgres.sh"
    out = subprocess.run([str(script), "start", d + "/pg"], capture_output=True, text=True, check=True).stdout
    dsn = out.split("SEDIMENT_TEST_POSTGRES_DSN='")[1].split("'")[0]
    yield dsn, lambda cmd: subprocess.run([str(script), cmd, d + "/pg"], check=True, timeout=60)
    subprocess.run([str(script), "stop", d + "/pg"], check=False)
    subprocess.run(["rm", "-rf", d], check=False)


def test_postgres_restart_under_write_load(start_server, tmp_path, own_postgres):
    dsn, pg = own_postgres
    cfg = tmp_path / "pg.toml"
    cfg.write_text(f'[database]\ntype = "postgres"\npostgres_dsn = "{dsn}"\n')
    server = start_server("--config", str(cfg))
    set_up_admin(server, KEY, SECRET)
    c = sdk(server)
    c.repositories_api.create_repository(m.RepositoryCreation(name="busy", storage_namespace=f"local://{server.data_dir}/namespaces/ns"))

    acknowledged, statuses, stop = [], [], threading.Event()

    def writer():
        session = requests.Session()
        i = 0
        while not stop.is_set():
            try:
                r = session.post(server.url + "/api/v1/repositories/busy/branches/main/objects",
                                 params={"path": f"k{i:06d}"}, data=b"v", auth=(KEY, SECRET), timeout=30)
                statuses.append(r.status_code)
                if r.status_code == 201:
                    acknowledged.append(f"k{i:06d}")
            except requests.RequestException as e:
                statuses.append(str(e))
            i += 1

    t = threading.Thread(target=writer)
    t.start()
    eventually(lambda: len(acknowledged) >= 5, what="writes to flow")
    pg("halt")
    before = len(statuses)
    eventually(lambda: any(s != 201 for s in statuses[before:]), timeout=30, what="a write to meet the outage")
    during = len(statuses)
    pg("resume")
    eventually(lambda: 201 in statuses[during:], timeout=60, what="a write to succeed after the database is back")
    stop.set()
    t.join(60)
    assert server.proc.poll() is None, "the server kept running"
    outage = [s for s in statuses if s != 201]
    assert outage, "some requests met the outage"
    assert set(outage) <= {503}, f"outage answers: {set(map(str, outage))}"
    assert 201 in statuses[during:], "writes succeed again after the database is back, without a restart"
    listed = []
    after = ""
    while True:
        page = c.objects_api.list_objects("busy", "main", amount=1000, after=after)
        listed += [o.path for o in page.results]
        if not page.pagination.has_more:
            break
        after = page.pagination.next_offset
    assert set(acknowledged) <= set(listed), "every acknowledged write survived"
