"""Merged files with copied and re-encoded row groups, read by other engines.

A table is imported from files of mixed sizes (`sediment-bench import`): large
files whose full row groups a merge copies as encoded bytes, and runs of small
files whose row groups it decodes and packs together. After one compaction
pass (`sediment-bench compact`), pyarrow, DuckDB, DataFusion and Polars must
each read the merged file and return exactly the rows of the inputs, and find
rows by the bloom-filtered column.
"""
import json
import subprocess

import duckdb
import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from datafusion import SessionContext

from conftest import BINARY, ROOT
BENCH = ROOT / "build" / "sediment-bench"

SCHEMA = pa.schema([pa.field("block_num", pa.uint64(), nullable=False), ("log_index", pa.int32()),
                    ("address", pa.binary(20)), ("topic0", pa.binary(32)), ("data", pa.binary()),
                    ("value", pa.int64())])


def write_inputs(directory, sizes):
    rng = np.random.default_rng(5)
    addresses = [rng.bytes(20) for _ in range(50)]
    block = 0
    for i, rows in enumerate(sizes):
        blocks = np.sort(rng.integers(block, block + 20, rows)).astype(np.uint64)
        block += 20
        topic = [None if j % 7 == 0 else rng.bytes(32) for j in range(rows)]
        table = pa.table({
            "block_num": blocks, "log_index": np.arange(rows, dtype=np.int32),
            "address": pa.array([addresses[j] for j in rng.integers(0, 50, rows)], pa.binary(20)),
            "topic0": pa.array(topic, pa.binary(32)),
            "data": pa.array([rng.bytes(int(n)) for n in rng.integers(0, 80, rows)], pa.binary()),
            "value": rng.integers(-(1 << 40), 1 << 40, rows)}, schema=SCHEMA)
        pq.write_table(table, directory / f"{i:04d}.parquet")


def sediment(*args):
    out = subprocess.run([str(BENCH), *args], check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def merged(tmp_path_factory):
    work = tmp_path_factory.mktemp("merge-readers")
    inputs = work / "inputs"
    inputs.mkdir()
    # Row groups of 2,048 rows at import; the merge's limit is 4,096, so a
    # 2,048-row group is full (copied) and the small files' groups are packed.
    sizes = [5000, 5000, 300, 300, 300, 300, 300, 300, 5000, 700, 5000]
    write_inputs(inputs, sizes)
    data = work / "data"
    imported = sediment("import", "--input-dir", str(inputs), "--data-dir", str(data),
                        "--max-row-group-rows", "2048")
    stats = sediment("compact", "--data-dir", str(data), "--threads", "2", "--bytes", str(1 << 40),
                     "--max-row-group-rows", "4096")
    assert stats["output_files"] == 1 and stats["failed"] == 0
    assert stats["row_groups_copied"] > 0 and stats["row_groups_reencoded"] > 0, stats
    live = set(imported["files"])
    outputs = [p for p in (data / "objects" / "tables" / "bench" / "logs").glob("*.parquet") if str(p) not in live]
    assert len(outputs) == 1
    expected = pa.concat_tables([pq.read_table(inputs / f"{i:04d}.parquet") for i in range(len(sizes))])
    return outputs[0], expected, stats


# What every engine can give back: DuckDB and Polars have no fixed-size binary.
LOOSE = pa.schema([pa.field("block_num", pa.uint64(), nullable=False), ("log_index", pa.int32()),
                   ("address", pa.binary()), ("topic0", pa.binary()), ("data", pa.binary()), ("value", pa.int64())])


def canonical(table):
    return table.select(LOOSE.names).cast(LOOSE).sort_by([("block_num", "ascending"), ("log_index", "ascending"), ("value", "ascending")])


def test_pyarrow_reads_every_row(merged):
    path, expected, _ = merged
    got = pq.read_table(path)
    assert got.num_rows == expected.num_rows
    assert got.equals(expected.cast(got.schema)), "pyarrow: rows differ from the inputs, or are out of order"
    md = pq.ParquetFile(path).metadata
    assert md.num_row_groups > 1
    for i in range(md.num_row_groups):
        rg = md.row_group(i)
        assert rg.column(0).statistics.has_min_max
        assert rg.num_rows <= 4096


def test_duckdb_reads_every_row(merged):
    path, expected, _ = merged
    got = duckdb.connect().sql(f"SELECT * FROM read_parquet('{path}')").to_arrow_table()
    assert canonical(got).equals(canonical(expected))


def test_datafusion_reads_every_row(merged):
    path, expected, _ = merged
    ctx = SessionContext()
    ctx.register_parquet("t", str(path))
    got = pa.Table.from_batches(ctx.sql("SELECT * FROM t").collect())
    assert canonical(got).equals(canonical(expected))


def test_polars_reads_every_row(merged):
    path, expected, _ = merged
    got = pl.read_parquet(path).to_arrow()
    assert canonical(got).equals(canonical(expected))


def test_engines_find_rows_by_address(merged):
    path, expected, _ = merged
    address = expected["address"][123].as_py()
    want = sum(1 for a in expected["address"].to_pylist() if a == address)
    assert duckdb.connect().execute(f"SELECT count(*) FROM read_parquet('{path}') WHERE address = ?",
                                    [address]).fetchone()[0] == want
    ctx = SessionContext()
    ctx.register_parquet("t", str(path))
    got = ctx.sql(f"SELECT count(*) AS n FROM t WHERE address = X'{address.hex()}'").to_pydict()["n"][0]
    assert got == want
    assert pl.scan_parquet(path).filter(pl.col("address") == address).select(pl.len()).collect().item() == want
    absent = bytes(20)
    assert duckdb.connect().execute(f"SELECT count(*) FROM read_parquet('{path}') WHERE address = ?",
                                    [absent]).fetchone()[0] == 0
