#!/usr/bin/env python3
"""Merge speed and peak memory: Sediment against DuckDB, DataFusion, Polars and
pyarrow on the same input files, and queries over each one's output.

Input shapes (chain logs: block_num, log_index, address, topics, data, value):
  tiny     thousands of tiny files, as a chain's head writes them
  medium   a few hundred medium files
  remerge  a dozen large files Sediment wrote itself (full row groups), merged again
  foreign  a dozen large files with other row-group sizes (1M rows), merged again

Every shape's files are imported as one table's segments (`sediment-bench
import`); then each engine merges exactly those files into one output with
zstd level 1 and row groups of --row-group-rows rows, in its own process, at
each thread count. Times are the operation alone (no process start); peak RSS
comes from wait4. Ratios are to the fastest peer of the same row (>1: Sediment
is faster). Sediment's times include the fsync that makes its output durable;
a second ratio takes each peer's time until its output files are fsynced too.

Sediment's merge here is the head merge: its output is not final (the target
is far), so pages of the files Sediment's append path wrote are copied. The
tiny shape is also merged once as a final merge ("tiny, final": the target is
the inputs' size, so the output is encoded fully, with dictionaries), against
the same peer times.

On MinIO (started by scripts/minio.sh; --minio-files, default 600 tiny files):
the same merge with the inputs and the output on object storage. DuckDB reads
and writes MinIO through its httpfs extension, loaded offline from the
duckdb-ext-httpfs package in .venv-engines (DuckDB 1.4.4, the version those
extensions are built for; locally DuckDB is .venv's).

Query side: the tiny shape's outputs (Sediment's head merge, Sediment's final
merge, DuckDB's) are queried by DuckDB, Polars and DataFusion: a 100-block
range, equality on an address, equality on topic0, topic0 = within a 5,000-block
range, and a full-scan aggregate (the ten addresses with the most logs). DataFusion
twice: with its defaults, and with filters pushed into the scan. Each round is
one process per engine that opens the three files and alternates them run by
run (--repeat runs of each query per file); the median of --query-rounds
rounds' medians is reported. Twice: with the files as their writers left them
in the page cache (DuckDB's written through it; Sediment's final file around
it, O_DIRECT, so the queries' own reads bring it in), and with all three
evicted before each round (POSIX_FADV_DONTNEED), so every file is brought in
by the engine's reads: the files alone compared.

Usage: .venv/bin/python bench/compaction_bench.py [--scale 1.0] [--threads 1 2] [--shapes tiny medium ...]
                                                 [--minio-files 600]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
SEDIMENT = ROOT / "build" / "sediment"
BENCH = ROOT / "build" / "sediment-bench"
ENGINES_PYTHON = ROOT / ".venv-engines" / "bin" / "python"  # DuckDB 1.4.4 with its offline extensions

# Each peer gets the path of a JSON file: files (paths or s3:// URLs), dir (their
# directory), out (a directory to write into), threads, rg (rows per row
# group), s3 (endpoint and keys, or null for local files).
PEERS = {
    "duckdb": r"""
import duckdb, glob, json, site, sys, time
a = json.load(open(sys.argv[1]))
con = duckdb.connect()
if a["s3"]:
    s3 = a["s3"]
    ext = glob.glob(f"{site.getsitepackages()[0]}/duckdb_ext/extensions/*/*/httpfs.duckdb_extension")[0]
    con.execute(f"LOAD '{ext}'")
    con.execute(f"CREATE SECRET m (TYPE s3, KEY_ID '{s3['key']}', SECRET '{s3['secret']}', ENDPOINT '{s3['endpoint']}', "
                "URL_STYLE 'path', USE_SSL false, REGION 'us-east-1')")
con.execute(f"SET threads = {a['threads']}")
con.execute("SET preserve_insertion_order = true")
t = time.perf_counter()
con.execute(f"COPY (SELECT * FROM read_parquet({a['files']!r})) TO '{a['out']}/out.parquet' "
            f"(FORMAT parquet, COMPRESSION zstd, COMPRESSION_LEVEL 1, ROW_GROUP_SIZE {a['rg']})")
print(json.dumps({"seconds": time.perf_counter() - t}))
""",
    "polars": r"""
import json, sys, time
import polars as pl
a = json.load(open(sys.argv[1]))
opts = None
if a["s3"]:
    s3 = a["s3"]
    opts = {"aws_endpoint_url": "http://" + s3["endpoint"], "aws_access_key_id": s3["key"],
            "aws_secret_access_key": s3["secret"], "aws_region": "us-east-1", "aws_allow_http": "true"}
t = time.perf_counter()
pl.scan_parquet(a["files"], storage_options=opts).sink_parquet(
    f"{a['out']}/out.parquet", compression="zstd", compression_level=1, row_group_size=a["rg"], storage_options=opts)
print(json.dumps({"seconds": time.perf_counter() - t}))
""",
    "datafusion": r"""
import json, sys, time
from datafusion import SessionContext, SessionConfig
a = json.load(open(sys.argv[1]))
ctx = SessionContext(SessionConfig().with_target_partitions(a["threads"])
                     .set("datafusion.execution.parquet.max_row_group_size", str(a["rg"])))
if a["s3"]:
    from datafusion.object_store import AmazonS3
    s3 = a["s3"]
    ctx.register_object_store("s3://", AmazonS3(bucket_name=s3["bucket"], region="us-east-1",
        access_key_id=s3["key"], secret_access_key=s3["secret"], endpoint="http://" + s3["endpoint"], allow_http=True),
        s3["bucket"])
t = time.perf_counter()
df = ctx.read_parquet(a["dir"] + "/")
df.write_parquet(f"{a['out']}/out.parquet", compression="zstd", compression_level=1)
print(json.dumps({"seconds": time.perf_counter() - t}))
""",
    "pyarrow": r"""
import json, sys, time
import pyarrow as pa, pyarrow.dataset as ds, pyarrow.fs as pafs
a = json.load(open(sys.argv[1]))
pa.set_cpu_count(a["threads"])
pa.set_io_thread_count(max(a["threads"], 8 if a["s3"] else 2))
files, out, fsys = a["files"], a["out"], None
if a["s3"]:
    s3 = a["s3"]
    fsys = pafs.S3FileSystem(access_key=s3["key"], secret_key=s3["secret"], endpoint_override=s3["endpoint"],
                             scheme="http")
    files = [f[len("s3://"):] for f in files]
    out = out[len("s3://"):]
t = time.perf_counter()
fmt = ds.ParquetFileFormat()
ds.write_dataset(ds.dataset(files, format="parquet", filesystem=fsys), out, format="parquet", filesystem=fsys,
                 file_options=fmt.make_write_options(compression="zstd", compression_level=1),
                 min_rows_per_group=a["rg"], max_rows_per_group=a["rg"], max_rows_per_file=0,
                 basename_template="out-{i}.parquet", use_threads=a["threads"] > 1, preserve_order=True)
print(json.dumps({"seconds": time.perf_counter() - t}))
""",
}

# Each peer's script ends here: its time, and its time until its output is
# durable (every file written fsynced, as Sediment's always is before the
# registry refers to it; a local peer's output is otherwise still in dirty
# page-cache pages when it stops the clock). On S3 a PUT is durable when it returns.
DURABLE = r"""
seconds = time.perf_counter() - t
if not a["s3"]:
    import os
    for root, _, names in os.walk(a["out"]):
        for n in names:
            fd = os.open(os.path.join(root, n), os.O_RDONLY)
            os.fsync(fd)
            os.close(fd)
print(json.dumps({"seconds": seconds, "durable_seconds": time.perf_counter() - t}))
"""
PEERS = {peer: script.replace(
    'print(json.dumps({"seconds": time.perf_counter() - t}))\n', DURABLE) for peer, script in PEERS.items()}

QUERY_SCRIPT = r"""
import json, sys, time, statistics
engine, lo, addr, topic, repeat = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5])
paths = sys.argv[6:]
addr, topic = bytes.fromhex(addr), bytes.fromhex(topic)
hi = lo + 99
wide = lo + 4999  # topic0 = within 5,000 blocks: a third of the tiny shape's 15,000
if engine == "duckdb":
    import duckdb
    con = duckdb.connect()
    con.execute("SET threads = 2")
    def queries(path):
        sql = lambda where, args=(): lambda: con.execute(
            f"SELECT count(*), sum(value) FROM read_parquet('{path}') WHERE {where}", list(args)).fetchall()
        return {"range": sql(f"block_num BETWEEN {lo} AND {hi}"), "address": sql("address = ?", [addr]),
                "topic0": sql("topic0 = ?", [topic]),
                "topic0_range": sql(f"topic0 = ? AND block_num BETWEEN {lo} AND {wide}", [topic]),
                "aggregate": lambda: con.execute(f"SELECT address, count(*), sum(value) FROM read_parquet('{path}') "
                                                 "GROUP BY address ORDER BY 2 DESC LIMIT 10").fetchall()}
elif engine == "polars":
    import polars as pl
    agg = [pl.len(), pl.col("value").sum()]
    def queries(path):
        lf = pl.scan_parquet(path)
        where = lambda cond: lambda: lf.filter(cond).select(agg).collect().rows()
        return {"range": where(pl.col("block_num").is_between(lo, hi)), "address": where(pl.col("address") == addr),
                "topic0": where(pl.col("topic0") == topic),
                "topic0_range": where((pl.col("topic0") == topic) & pl.col("block_num").is_between(lo, wide)),
                "aggregate": lambda: lf.group_by("address").agg(agg).sort("len", descending=True).head(10)
                .collect().rows()}
else:
    # "datafusion": its defaults (no filter pushdown into the scan), as a user gets it;
    # "datafusion-pushdown": filters evaluated inside the Parquet scan (row selections).
    from datafusion import SessionContext, SessionConfig
    cfg = SessionConfig().with_target_partitions(2).set("datafusion.execution.parquet.bloom_filter_on_read", "true")
    if engine == "datafusion-pushdown":
        cfg = cfg.set("datafusion.execution.parquet.pushdown_filters", "true")
    ctx = SessionContext(cfg)
    def queries(path):
        t = f"t{len(ctx.catalog().schema().names())}"
        ctx.register_parquet(t, path)
        sql = lambda where: lambda: ctx.sql(f"SELECT count(*), sum(value) FROM {t} WHERE {where}").collect()
        return {"range": sql(f"block_num BETWEEN {lo} AND {hi}"), "address": sql(f"address = X'{addr.hex()}'"),
                "topic0": sql(f"topic0 = X'{topic.hex()}'"),
                "topic0_range": sql(f"topic0 = X'{topic.hex()}' AND block_num BETWEEN {lo} AND {wide}"),
                "aggregate": lambda: ctx.sql(f"SELECT address, count(*), sum(value) FROM {t} GROUP BY address "
                                             "ORDER BY 2 DESC LIMIT 10").collect()}
per_file = [queries(p) for p in paths]
out = [{} for _ in paths]
for name in per_file[0]:
    # The files alternate run by run (each first in turn), so drift in this
    # noisy machine's speed falls on all of them alike.
    times = [[] for _ in paths]
    for qs in per_file:
        qs[name]()
    for r in range(repeat):
        for i in [(r + k) % len(paths) for k in range(len(paths))]:
            t = time.perf_counter(); per_file[i][name](); times[i].append((time.perf_counter() - t) * 1000)
    for i, ts in enumerate(times):
        out[i][name] = statistics.median(ts)
print(json.dumps(out))
"""

QUERIES = ("range", "address", "topic0", "topic0_range", "aggregate")

SCHEMA = pa.schema([pa.field("block_num", pa.uint64(), nullable=False), ("log_index", pa.int32()),
                    ("address", pa.binary(20)), ("topic0", pa.binary(32)), ("topic1", pa.binary(32)),
                    ("data", pa.binary()), ("value", pa.int64())])


def generate(directory, files, rows, blocks_per_file, seed):
    """Contiguous block ranges; few hot addresses and topics, skewed data sizes, like logs tables."""
    rng = np.random.default_rng(seed)
    per_file = rows // files
    addr_pool = rng.integers(0, 256, (4096, 20), dtype=np.uint8)
    topic_pool = rng.integers(0, 256, (256, 32), dtype=np.uint8)
    zipf_a = np.minimum(rng.zipf(1.3, rows), 4096) - 1
    zipf_t = np.minimum(rng.zipf(1.5, rows), 256) - 1
    block = 0
    for i in range(files):
        sl = slice(i * per_file, (i + 1) * per_file)
        bn = np.sort(rng.integers(block, block + blocks_per_file, per_file)).astype(np.uint64)
        block += blocks_per_file
        lens = np.minimum(rng.pareto(1.5, per_file) * 16, 2048).astype(np.int64)
        offsets = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
        payload = rng.integers(0, 256, int(offsets[-1]), dtype=np.uint8).tobytes()
        data = pa.Array.from_buffers(pa.binary(), per_file, [None, pa.py_buffer(offsets.tobytes()),
                                                             pa.py_buffer(payload)])
        addr = pa.FixedSizeBinaryArray.from_buffers(
            pa.binary(20), per_file, [None, pa.py_buffer(addr_pool[zipf_a[sl]].tobytes())])
        t0 = pa.FixedSizeBinaryArray.from_buffers(
            pa.binary(32), per_file, [None, pa.py_buffer(topic_pool[zipf_t[sl]].tobytes())])
        t1 = pa.FixedSizeBinaryArray.from_buffers(
            pa.binary(32), per_file, [None, pa.py_buffer(rng.integers(0, 256, (per_file, 32), dtype=np.uint8).tobytes())])
        table = pa.Table.from_arrays([pa.array(bn), pa.array(np.arange(per_file, dtype=np.int32)), addr, t0, t1, data,
                                      pa.array(rng.integers(0, 1 << 40, per_file))], schema=SCHEMA)
        pq.write_table(table, directory / f"{i:06d}.parquet", compression="zstd", compression_level=1)


# Children are started by a small launcher process, not by this one: a child
# forked from this process (which holds the generated data) would carry its
# resident size into wait4's peak RSS until exec.
LAUNCHER = r"""
import json, os, sys
for line in sys.stdin:
    req = json.loads(line)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        os.dup2(w, 1)
        os.environ.update(req["env"])
        os.execv(req["cmd"][0], req["cmd"])
    os.close(w)
    with os.fdopen(r) as f:
        out = f.read()
    _, status, usage = os.wait4(pid, 0)
    print(json.dumps({"rc": os.waitstatus_to_exitcode(status), "out": out, "rss_kib": usage.ru_maxrss}), flush=True)
"""
_launcher = None


def start_launcher():
    global _launcher
    if _launcher is None:
        _launcher = subprocess.Popen([sys.executable, "-c", LAUNCHER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True)


def run(cmd, env=None):
    """Runs cmd in a child process; returns (JSON of its last stdout line, its peak RSS in MiB)."""
    start_launcher()
    os.sync()  # no engine pays for the previous one's write-back
    _launcher.stdin.write(json.dumps({"cmd": [str(c) for c in cmd], "env": env or {}}) + "\n")
    _launcher.stdin.flush()
    res = json.loads(_launcher.stdout.readline())
    if res["rc"] != 0:
        raise RuntimeError(f"{cmd[:3]} failed:\n{res['out'][-2000:]}")
    return json.loads(res["out"].strip().splitlines()[-1]), res["rss_kib"] / 1024


def evict(paths):
    """Drops the files from the page cache (they are fsynced: clean pages go), so that the next reads bring
    them all back in alike."""
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)


def query_rounds(cmd, files, rounds, evicted):
    """Runs a query script over `files` (it prints, per file, {query: median ms}) `rounds` times, each round
    after evicting the files if `evicted`; per file, each query's median over the rounds."""
    per = [[] for _ in files]
    for _ in range(rounds):
        if evicted:
            evict(files)
        times, _ = run(cmd)
        for i, t in enumerate(times):
            per[i].append(t)
    return [{q: statistics.median(t[q] for t in p) for q in QUERIES} for p in per]


def fresh(path):
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path


def sediment_live(data_dir):
    """The live segment files of the bench table after a compaction (the newest generation)."""
    files = sorted((data_dir / "objects" / "tables" / "bench" / "logs").glob("*.parquet"))
    return files


def import_shape(work, name, inputs, row_group_rows, s3=None):
    base = work / f"{name}-imported"
    if base.exists():
        shutil.rmtree(base)
    cmd = [str(BENCH), "import", "--input-dir", str(inputs), "--data-dir", str(base),
           "--max-row-group-rows", str(row_group_rows)]
    if s3:
        cmd += ["--objects", s3["objects"], "--s3-endpoint", s3["endpoint"]]
    imported, _ = run(cmd, env=s3 and {"AWS_ACCESS_KEY_ID": s3["key"], "AWS_SECRET_ACCESS_KEY": s3["secret"]})
    return base, imported


def median_run(results):
    """The run of median time among (JSON, RSS) results, with the largest RSS of them all."""
    ordered = sorted(results, key=lambda r: r[0].get("seconds") or 0)
    return ordered[len(ordered) // 2][0], max(r[1] for r in results)


def merge_all(work, name, base, imported, threads_list, rg_rows, rows_out, s3=None, keep=(), runs=1):
    """Every engine merges the imported files at every thread count, `runs` times (the median is kept; on MinIO
    once); s3: MinIO's endpoint, keys, bucket. Outputs are deleted as soon as they are measured (disk space),
    except the (engine, threads) in keep."""
    seg_dir = imported["files"][0].rsplit("/", 1)[0]
    outputs = {}
    for threads in threads_list:
        copy = work / f"{name}-sediment-{threads}"
        cmd = [str(BENCH), "compact", "--data-dir", str(copy), "--threads", str(threads),
               "--bytes", str(1 << 40), "--max-row-group-rows", str(rg_rows)]
        if s3:
            # As many reads in flight as pyarrow gets I/O threads here.
            cmd += ["--objects", s3["objects"], "--s3-endpoint", s3["endpoint"], "--metadata-concurrency", "8"]
        sed_runs = []
        for _ in range(runs if not s3 else 1):
            if copy.exists():
                shutil.rmtree(copy)
            shutil.copytree(base, copy)
            sed_runs.append(run(cmd, env=s3 and {"AWS_ACCESS_KEY_ID": s3["key"],
                                                 "AWS_SECRET_ACCESS_KEY": s3["secret"]}))
        sed, sed_rss = median_run(sed_runs)
        results = {"sediment": (sed["seconds"], sed_rss),
                   "row_groups": (sed.get("row_groups_copied", 0), sed.get("row_groups_from_pages", 0),
                                  sed.get("row_groups_reencoded", 0))}
        outputs[("sediment", threads)] = copy
        if s3:
            # Sediment's output went next to the inputs: remove it, so the
            # peers (DataFusion reads the directory) see the inputs alone.
            import pyarrow.fs as pafs
            fsys = pafs.S3FileSystem(access_key=s3["key"], secret_key=s3["secret"], endpoint_override=s3["endpoint"],
                                     scheme="http")
            keep = {f[len("s3://"):] for f in imported["files"]}
            for info in fsys.get_file_info(pafs.FileSelector(seg_dir[len("s3://"):], recursive=True)):
                if info.type == pafs.FileType.File and info.path not in keep:
                    fsys.delete_file(info.path)
        env = {"POLARS_MAX_THREADS": str(threads), "TOKIO_WORKER_THREADS": str(threads),
               "RAYON_NUM_THREADS": str(threads)}
        for peer, script in PEERS.items():
            if s3:
                out = f"s3://{s3['bucket']}/{name}-{peer}-{threads}"
            else:
                out = str(fresh(work / f"{name}-{peer}-{threads}"))
            arg = {"files": imported["files"], "dir": seg_dir, "out": out, "threads": threads, "rg": rg_rows,
                   "s3": s3}
            arg_file = work / f"{name}-{peer}-{threads}.json"  # too long for a command line
            arg_file.write_text(json.dumps(arg))
            python = ENGINES_PYTHON if (s3 and peer == "duckdb") else sys.executable
            peer_runs = []
            for k in range(runs if not s3 else 1):
                if k and not s3:
                    fresh(Path(out))
                peer_runs.append(run([str(python), "-c", script, str(arg_file)], env=env))
            res, rss = median_run(peer_runs)
            results[peer] = (res.get("seconds"), rss, res.get("durable_seconds"))
            outputs[(peer, threads)] = Path(out) if not s3 else out
            if not s3 and (peer, threads) not in keep:
                shutil.rmtree(out, ignore_errors=True)
        rows_out.append((name, threads, results))
        shutil.rmtree(copy / "kv", ignore_errors=True)
        if ("sediment", threads) not in keep:
            shutil.rmtree(copy, ignore_errors=True)
    return outputs


def final_merge(work, base, imported, threads, rg_rows, rows_out, runs=1):
    """Sediment's final merge of the same files (target = their size: the output is encoded fully), `runs`
    times (the median is kept); its time goes in a row of its own beside the peers' times of the head-merge row
    (they do the same work either way)."""
    copy = work / "tiny-sediment-final"
    results = []
    for _ in range(runs):
        if copy.exists():
            shutil.rmtree(copy)
        shutil.copytree(base, copy)
        results.append(run([str(BENCH), "compact", "--data-dir", str(copy), "--threads", str(threads),
                            "--bytes", str(imported["bytes"]), "--max-row-group-rows", str(rg_rows)]))
    sed, rss = median_run(results)
    assert sed["final_outputs"] == 1, sed
    peers = next(res for name, t, res in rows_out if name == "tiny" and t == threads)
    res = dict(peers, sediment=(sed["seconds"], rss),
               row_groups=(sed["row_groups_copied"], sed["row_groups_from_pages"], sed["row_groups_reencoded"]))
    rows_out.append(("tiny, final", threads, res))
    return copy


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=float, default=1.0, help="multiplies every shape's rows")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--shapes", nargs="*", default=["tiny", "medium", "remerge", "foreign"],
                    help="local shapes; none (--shapes alone) runs only the MinIO shape")
    ap.add_argument("--row-group-rows", type=int, default=131072)
    ap.add_argument("--repeat", type=int, default=15, help="runs of each query")
    ap.add_argument("--query-rounds", type=int, default=3,
                    help="rounds of the queries, each file first in turn; the median of the rounds is reported")
    ap.add_argument("--merge-runs", type=int, default=1,
                    help="runs of each local merge (every engine); the median time is reported")
    ap.add_argument("--iceberg", action="store_true",
                    help="also query the tiny shape's final file through Sediment's Iceberg catalog against "
                         "DuckDB's file through a local one and through Iceberg's reference REST catalog, in DuckDB "
                         "and PyIceberg (bench/iceberg_query_probe.py; needs Maven and a JDK for the reference catalog)")
    ap.add_argument("--spark", action="store_true",
                    help="also run the queries in Spark (PySpark in .venv-engines, local[2]; "
                         "bench/spark_query_probe.py), each file read directly")
    ap.add_argument("--work", default=None, help="work directory (default: a temp dir, removed)")
    ap.add_argument("--minio-files", type=int, default=600,
                    help="tiny files merged on MinIO (started here by scripts/minio.sh); 0 = skip")
    args = ap.parse_args()
    start_launcher()  # before this process grows
    work = Path(args.work or tempfile.mkdtemp(prefix="sediment-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    rg = args.row_group_rows
    rows_out = []
    queries = []
    iceberg_queries = {}
    try:
        def inputs_for(name, files, rows, blocks_per_file, seed):
            d = work / f"{name}-inputs"
            if not d.exists():
                d.mkdir()
                generate(d, files, int(rows * args.scale), blocks_per_file, seed)
            return d

        shapes = {
            "tiny": dict(files=3000, rows=7_500_000, blocks=5, import_rg=rg),
            "medium": dict(files=300, rows=7_500_000, blocks=50, import_rg=rg),
            "remerge": dict(files=12, rows=12_000_000, blocks=1000, import_rg=rg),
            "foreign": dict(files=12, rows=12_000_000, blocks=1000, import_rg=1 << 20),
        }
        for name in args.shapes:
            sh = shapes[name]
            inputs = inputs_for(name if name != "foreign" else "remerge", sh["files"], sh["rows"], sh["blocks"],
                                seed={"tiny": 1, "medium": 2}.get(name, 7))
            base, imported = import_shape(work, name, inputs, sh["import_rg"])
            print(f"{name}: {len(imported['files'])} files, {imported['rows']:,} rows, "
                  f"{imported['stored_bytes'] / 2**20:.0f} MiB stored", file=sys.stderr)
            keep = {("sediment", args.threads[-1]), ("duckdb", args.threads[-1])} if name == "tiny" else set()
            outputs = merge_all(work, name, base, imported, args.threads, rg, rows_out, keep=keep,
                                runs=args.merge_runs)
            if name == "tiny":
                for t in args.threads:
                    final = final_merge(work, base, imported, t, rg, rows_out, args.merge_runs)
                sed_files = [f for f in sediment_live(outputs[("sediment", args.threads[-1])])
                             if pq.ParquetFile(f).metadata.num_rows == imported["rows"]]
                final_files = [f for f in sediment_live(final) if pq.ParquetFile(f).metadata.num_rows == imported["rows"]]
                duck_file = outputs[("duckdb", args.threads[-1])] / "out.parquet"
                probe = pq.read_table(duck_file, columns=["block_num", "address", "topic0"])
                mid = probe.num_rows // 2
                lo = probe["block_num"][mid].as_py()
                addr = probe["address"][mid].as_py().hex()
                topic = probe["topic0"][mid].as_py().hex()
                # The three files in one process per engine and round, alternated run by run (the
                # machine is noisy, and whichever file went first right after the merges paid for the
                # kernel's work on the files just deleted); each query's median over the rounds.
                files = (final_files[0], sed_files[0], duck_file)
                # Twice: the files as their writers left them in the page cache, then each round
                # with all three evicted first, so that the engine's reads bring them in alike.
                for engine in ("duckdb", "polars", "datafusion", "datafusion-pushdown") + (("spark",) if args.spark else ()):
                    if engine == "spark":
                        cmd = [ENGINES_PYTHON, ROOT / "bench" / "spark_query_probe.py", "--lo", lo, "--addr", addr,
                               "--topic", topic, "--repeat", args.repeat, *files]
                    else:
                        cmd = [sys.executable, "-c", QUERY_SCRIPT, engine, lo, addr, topic, args.repeat, *files]
                    queries.append((engine, *query_rounds(cmd, files, args.query_rounds, evicted=False),
                                    *query_rounds(cmd, files, args.query_rounds, evicted=True)))
                if args.iceberg:
                    probe_out, _ = run([str(ROOT / ".venv-engines" / "bin" / "python"),
                                        str(ROOT / "bench" / "iceberg_query_probe.py"), "--data-dir", str(final),
                                        "--duck-file", str(duck_file), "--lo", str(lo), "--addr", addr,
                                        "--topic", topic, "--sediment-file", str(final_files[0]),
                                        "--repeat", str(args.repeat)])
                    iceberg_queries.update(probe_out)
                shutil.rmtree(final, ignore_errors=True)
            shutil.rmtree(base, ignore_errors=True)
        if args.minio_files:
            mdir = work / "minio"
            env_lines = subprocess.run([str(ROOT / "scripts" / "minio.sh"), "start", str(mdir)], check=True,
                                       capture_output=True, text=True).stdout
            m = dict(l.replace("export ", "").split("=", 1) for l in env_lines.splitlines() if "=" in l)
            try:
                s3 = {"endpoint": m["SEDIMENT_TEST_S3_ENDPOINT"], "key": m["SEDIMENT_TEST_S3_ACCESS_KEY"],
                      "secret": m["SEDIMENT_TEST_S3_SECRET_KEY"], "bucket": m["SEDIMENT_TEST_S3_BUCKET"]}
                s3["objects"] = f"s3://{s3['bucket']}/tables-bench"
                n = args.minio_files
                inputs = inputs_for("minio", n, int(7_500_000 * n / 3000), 5, seed=3)
                base, imported = import_shape(work, "minio", inputs, rg, s3)
                print(f"minio: {len(imported['files'])} files, {imported['rows']:,} rows, "
                      f"{imported['stored_bytes'] / 2**20:.0f} MiB stored", file=sys.stderr)
                merge_all(work, "tiny on MinIO", base, imported, args.threads, rg, rows_out, s3)
            finally:
                subprocess.run([str(ROOT / "scripts" / "minio.sh"), "stop", str(mdir)], check=False)
        print()
        print(f"Merge: one output, zstd(1), row groups of {rg:,} rows. Ratio = fastest peer's time / Sediment's "
              f"(>1: Sediment faster). RSS = peak MiB. Times: median of {args.merge_runs} run(s) per engine. "
              f"Outputs durable: the peers' times until their output files are fsynced (Sediment's times always "
              f"include its fsync: the registry refers to the file).")
        print()
        peers = ["duckdb", "datafusion", "polars", "pyarrow"]
        print("| shape | threads | Sediment s | " + " | ".join(f"{p} s" for p in peers) +
              " | vs fastest peer | vs fastest peer, outputs durable | Sediment RSS | " +
              " | ".join(f"{p} RSS" for p in peers) + " | row groups copied / of copied pages / encoded |")
        print("|" + " --- |" * (7 + 2 * len(peers)))
        for name, threads, res in rows_out:
            sed = res["sediment"][0]
            fastest = min(res[p][0] for p in peers if res[p][0] is not None)
            # Sediment's time includes its fsync; the peers' first one does not.
            durable = min(res[p][2] for p in peers if res[p][0] is not None)
            secs = lambda p: f"{res[p][0]:.2f}" if res[p][0] is not None else "n/a"
            rss = lambda p: f"{res[p][1]:.0f}" if res[p][0] is not None else "n/a"
            print(f"| {name} | {threads} | {sed:.2f} | " + " | ".join(secs(p) for p in peers) +
                  f" | {fastest / sed:.2f}x | {durable / sed:.2f}x | {res['sediment'][1]:.0f} | " +
                  " | ".join(rss(p) for p in peers) +
                  f" | {res['row_groups'][0]} / {res['row_groups'][1]} / {res['row_groups'][2]} |")
        if queries:
            print()
            print("Queries over the tiny shape's merged outputs (median ms). final/DuckDB = DuckDB's file / Sediment's "
                  "final file (>=1: the final file is as fast or faster); head/final = Sediment's final file / its "
                  "head-merge file (<1: the not-yet-final file is slower)")
            print()
            print("| engine | query | final file ms | head-merge file ms | DuckDB's file ms | final vs DuckDB | "
                  "head-merge vs final | evicted first: final / DuckDB's ms | evicted first: final vs DuckDB |")
            print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
            for engine, f, h, d, ef, _, ed in queries:
                for q in QUERIES:
                    print(f"| {engine} | {q} | {f[q]:.1f} | {h[q]:.1f} | {d[q]:.1f} | {d[q] / f[q]:.2f}x | "
                          f"{f[q] / h[q]:.2f}x | {ef[q]:.1f} / {ed[q]:.1f} | {ed[q] / ef[q]:.2f}x |")
        if iceberg_queries:
            print()
            print("Through Iceberg catalogs (median ms): Sediment's final file served by its catalog; DuckDB's file "
                  "through its metadata file (DuckDB) or a local PyIceberg SQL catalog (PyIceberg), and through "
                  "Iceberg's reference REST catalog (both through REST catalogs). Ratio = DuckDB's file / Sediment's "
                  "(>=1: Sediment's as fast or faster)")
            print()
            pairs = (("catalogs", "Sediment's catalog / the peer's"), ("rest", "both through REST catalogs"),
                     ("direct", "the files read directly"), ("metadata", "both through metadata files"))
            print("| engine | query | " + " | ".join(f"{title}: ratio (ms)" for _, title in pairs) + " |")
            print("| --- | --- |" + " --- |" * len(pairs))
            for engine, per in iceberg_queries.items():
                for q, t in per.items():
                    cells = [f"{t[p][1] / t[p][0]:.2f}x ({t[p][0]:.1f} / {t[p][1]:.1f})" if p in t else "n/a"
                             for p, _ in pairs]
                    print(f"| {engine} | {q} | " + " | ".join(cells) + " |")
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
