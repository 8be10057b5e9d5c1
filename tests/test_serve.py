"""`sediment serve`: health, metrics, shutdown, and start-up errors."""
import signal
import socket
import time

import pytest
import requests

from conftest import free_port, run_sediment


def test_healthcheck_and_metrics(start_server, tmp_path):
    s = start_server()
    r = s.get("/api/v1/healthcheck")
    assert r.status_code == 204
    r = s.get("/metrics")
    assert r.status_code == 200
    assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    assert "# TYPE http_requests_total counter" in r.text
    assert 'http_requests_total{method="GET",route="server Healthcheck",code="204"} 1' in r.text
    assert "sediment_build_info{" in r.text
    # Embedded defaults under the data dir.
    assert (tmp_path / "data" / "kv").is_dir()
    assert (tmp_path / "data" / "objects").is_dir()


def test_unknown_route_is_json_404(start_server):
    s = start_server()
    r = s.get("/api/v1/does-not-exist")
    assert r.status_code == 404
    assert r.json() == {"message": "no route for GET /api/v1/does-not-exist"}


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_graceful_shutdown(start_server, sig):
    s = start_server()
    assert s.get("/api/v1/healthcheck").status_code == 204
    assert s.stop(sig) == 0
    assert "sediment stopped" in s.output()


def test_restart_on_same_data_dir(start_server, tmp_path):
    s = start_server()
    assert s.stop() == 0
    s2 = start_server()  # RocksDB lock released, data dir reused
    assert s2.get("/api/v1/healthcheck").status_code == 204


def test_restart_right_after_sigkill_with_clients_connected(start_server):
    """Seen by trying: after a SIGKILL, serve on the same address failed with
    "Address already in use" for about a minute (connections in TIME_WAIT)."""
    port = free_port()
    for _ in range(3):
        s = start_server(listen=f"127.0.0.1:{port}")
        sessions = [requests.Session() for _ in range(8)]
        for sess in sessions:  # keep-alive connections the server holds open
            assert sess.get(s.url + "/api/v1/healthcheck", timeout=10).status_code == 204
        s.stop(signal.SIGKILL)
        for sess in sessions:
            sess.close()
        started = time.monotonic()
        s2 = start_server(listen=f"127.0.0.1:{port}")
        assert s2.get("/api/v1/healthcheck").status_code == 204
        assert time.monotonic() - started < 10
        s2.stop(signal.SIGKILL)


def test_a_second_server_cannot_share_a_port(start_server, tmp_path):
    port = free_port()
    start_server(listen=f"127.0.0.1:{port}")
    code, out = run_sediment("serve", "--listen", f"127.0.0.1:{port}", "--data-dir", str(tmp_path / "other"))
    assert code != 0
    assert f"cannot listen on 127.0.0.1:{port}: Address already in use" in out


def test_env_override_and_json_logs(start_server):
    s = start_server(env={"SEDIMENT_LOG_FORMAT": "json", "SEDIMENT_LOG_LEVEL": "debug"})
    s.get("/api/v1/healthcheck")
    s.stop()
    import json
    records = [json.loads(line) for line in s.lines if line.startswith("{")]
    assert any("listening on" in r["msg"] for r in records)
    assert all({"time", "level", "msg"} <= r.keys() for r in records)


def test_config_file_is_used(start_server, tmp_path):
    cfg = tmp_path / "sediment.toml"
    cfg.write_text('[writer.compactor]\nactive = false\n[log]\nformat = "json"\n')
    s = start_server("--config", str(cfg))
    assert s.get("/api/v1/healthcheck").status_code == 204
    assert s.lines[0].startswith("{")


BAD_CONFIGS = [
    ("[writer]\nbytez = 5\n", "sediment.toml:2: writer.bytez: unknown setting"),
    ("[writer]\nbytes = \"big\"\n", "sediment.toml:2: writer.bytes: must be an integer"),
    ("[writer]\nbytes = -1\n", "sediment.toml:2: writer.bytes: must be at least 1, got -1"),
    ("[writer.compactor]\nmax_eager_bytes = -5\n", "writer.compactor.max_eager_bytes: must be at least 0"),
    ("[writer\n", "sediment.toml:1"),
    ("[server]\nlisten = \"nowhere\"\n", "server.listen"),
]


@pytest.mark.parametrize("text,expect", BAD_CONFIGS)
def test_bad_config_exits_with_one_clear_line(tmp_path, text, expect):
    cfg = tmp_path / "sediment.toml"
    cfg.write_text(text)
    data = tmp_path / "data"
    code, out = run_sediment("serve", "--config", str(cfg), "--data-dir", str(data), "--listen", "127.0.0.1:0")
    assert code == 2
    assert expect in out
    assert len(out.splitlines()) == 1, out
    assert not data.exists(), "nothing is created when the config is bad"


def test_what_settings_name_on_disk_is_checked_before_anything_is_created(tmp_path):
    """Issue 47: paths that cannot work, and rules between settings, stop start-up with the file and line,
    before kv/, objects/ or server-id exist; `sediment check-config` says the same and starts nothing."""
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    pages = tmp_path / "pages"
    pages.mkdir()
    cases = [
        (f'[catalog]\ncache_dir = "{a_file}"\n', f"sediment.toml:2: catalog.cache_dir: {a_file} exists and is not a"),
        (f'[console]\ndir = "{pages}"\n', f"sediment.toml:2: console.dir: {pages} has no index.html"),
        (f'[console]\nchart_js = "{tmp_path}/chart.js"\n', f"sediment.toml:2: console.chart_js: {tmp_path}/chart.js"),
        ("[catalog]\nrange_min_bytes = 4096\nrange_max_bytes = 2048\n",
         "sediment.toml:3: catalog.range_max_bytes: catalog.range_max_bytes (2048) must be at least"),
    ]
    cfg, data = tmp_path / "sediment.toml", tmp_path / "data"
    for text, expect in cases:
        cfg.write_text(text)
        code, out = run_sediment("serve", "--config", str(cfg), "--data-dir", str(data), "--listen", "127.0.0.1:0")
        assert (code, len(out.splitlines())) == (2, 1) and expect in out, (text, out)
        assert not data.exists(), "nothing is created when the config is bad"
        code, out = run_sediment("check-config", "--config", str(cfg))
        assert code == 2 and expect in out, (text, out)
    cfg.write_text('[writer]\nbytes = 1048576\n')
    assert run_sediment("check-config", "--config", str(cfg)) == (0, f"{cfg}: ok")


def test_bad_env_value(tmp_path):
    data = tmp_path / "data"
    code, out = run_sediment("serve", "--data-dir", str(data), env={"SEDIMENT_WRITER_COMPACTOR_ACTIVE": "maybe"})
    assert code == 2
    assert out == ("sediment: environment variable SEDIMENT_WRITER_COMPACTOR_ACTIVE: "
                   "writer.compactor.active: must be a boolean (true or false), got \"maybe\"")
    assert not data.exists()


def test_unreadable_config_file(tmp_path):
    code, out = run_sediment("serve", "--config", str(tmp_path / "missing.toml"), "--data-dir",
                             str(tmp_path / "data"))
    assert code == 2
    assert "missing.toml" in out and "cannot read config file" in out
    assert not (tmp_path / "data").exists()


def test_bad_listen_flag(tmp_path):
    code, out = run_sediment("serve", "--listen", "localhost", "--data-dir", str(tmp_path / "data"))
    assert code == 2
    assert "flag --listen: server.listen" in out


def test_port_in_use(tmp_path):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    port = sock.getsockname()[1]
    try:
        code, out = run_sediment("serve", "--listen", f"127.0.0.1:{port}", "--data-dir", str(tmp_path / "data"))
    finally:
        sock.close()
    assert code == 1
    assert f"cannot listen on 127.0.0.1:{port}: Address already in use" in out
    assert len(out.splitlines()) == 1, out
    assert not (tmp_path / "data").exists()


def test_unwritable_data_dir(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    code, out = run_sediment("serve", "--listen", "127.0.0.1:0", "--data-dir", str(blocker / "data"))
    assert code == 1
    assert f"cannot create data directory {blocker / 'data'}" in out


def test_data_dir_in_use_by_another_server(start_server, tmp_path):
    start_server()
    code, out = run_sediment("serve", "--listen", "127.0.0.1:0", "--data-dir", str(tmp_path / "data"))
    assert code == 1
    assert "in use by another process" in out


def test_version_and_help():
    code, out = run_sediment("version")
    assert code == 0 and out.startswith("sediment ") and "arrow 26.0.1" in out
    for cmd in ([], ["serve"], ["version"]):
        code, out = run_sediment(*cmd, "--help")
        assert code == 0 and "Usage:" in out
