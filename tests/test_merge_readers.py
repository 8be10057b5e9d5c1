"""Merged files with copied, page-copied and re-encoded row groups, read by other engines.

A table is imported from files of mixed sizes (`sediment-bench import`, the
append path: files without dictionaries): large files whose full row groups a
merge copies as encoded bytes, and runs of small files whose data pages it
concatenates into full row groups. Three merges (`sediment-bench compact`):
"pages", a merge that is not final (row groups copied and made of copied
pages); "final", the same files merged into a file that reaches the target
(encoded fully, with dictionaries, and the chunks zstd cannot shrink stored
uncompressed); "mixed", that final file merged again with
new small files (its full row groups copied, its dictionary-encoded tail
decoded and encoded, the new files' pages copied). pyarrow, DuckDB, DataFusion
and Polars must each read every output and return exactly the rows of the
inputs, and find rows by the bloom-filtered column.
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


def write_inputs(directory, sizes, block=0, seed=5):
    pool = np.random.default_rng(5)
    addresses = [pool.bytes(20) for _ in range(50)]
    rng = np.random.default_rng(seed)
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


def newest_output(data, before):
    files = [p for p in (data / "objects" / "tables" / "bench" / "logs").glob("*.parquet") if str(p) not in before]
    return max(files, key=lambda p: p.stat().st_mtime_ns)


def read_inputs(directory, count):
    return [pq.read_table(directory / f"{i:04d}.parquet") for i in range(count)]


@pytest.fixture(scope="module", params=["pages", "final", "mixed"])
def merged(request, tmp_path_factory):
    work = tmp_path_factory.mktemp(f"merge-readers-{request.param}")
    data = work / "data"
    expected = []
    block = 0

    def add(name, sizes):
        # Appends files of `sizes` rows after what the table holds (imported
        # with row groups of 2,048 rows; the merges' limit is 4,096, so a
        # 2,048-row group is full and copied, and smaller ones are packed).
        nonlocal block
        directory = work / name
        directory.mkdir()
        write_inputs(directory, sizes, block=block, seed=len(expected))
        block += 20 * len(sizes)
        expected.extend(read_inputs(directory, len(sizes)))
        return sediment("import", "--input-dir", str(directory), "--data-dir", str(data),
                        "--max-row-group-rows", "2048")

    def compact(target):
        stats = sediment("compact", "--data-dir", str(data), "--threads", "2", "--bytes", str(target),
                         "--max-row-group-rows", "4096")
        assert stats["output_files"] == 1 and stats["failed"] == 0, stats
        return stats

    if request.param == "mixed":
        # Two final files of one small row group each (dictionaries), then
        # new files: the finals' row groups are decoded and encoded together,
        # a new large file's full row groups copied, the small ones' pages copied.
        first = add("a", [300, 300, 300])
        compact(first["bytes"])
        second = add("b", [300, 300, 300])
        # At the smaller of the two totals the first final file is full and
        # the new files reach the target alone.
        compact(min(first["bytes"], second["bytes"] - first["bytes"]))
        imported = add("c", [5000, 300, 300, 700])
        stats = compact(1 << 40)
        assert stats["final_outputs"] == 0 and stats["input_files"] == 6, stats
        assert stats["row_groups_copied"] > 0 and stats["row_groups_from_pages"] > 0, stats
        assert stats["row_groups_reencoded"] > 0, stats
    else:
        imported = add("a", [5000, 5000, 300, 300, 300, 300, 300, 300, 5000, 700, 5000])
        # A target the group reaches makes the output final; a far one does not.
        stats = compact(imported["bytes"] if request.param == "final" else 1 << 40)
        if request.param == "final":
            assert stats["final_outputs"] == 1 and stats["row_groups_from_pages"] == 0, stats
        else:
            assert stats["final_outputs"] == 0 and stats["row_groups_reencoded"] == 0, stats
            assert stats["row_groups_copied"] > 0 and stats["row_groups_from_pages"] > 0, stats
    output = newest_output(data, set(imported["files"]))
    md = pq.ParquetFile(output).metadata
    dictionaries = {md.row_group(i).column(2).has_dictionary_page for i in range(md.num_row_groups)}
    # Only a final merge encodes with dictionaries; "mixed" copies some of the final file's row groups.
    assert dictionaries == {"pages": {False}, "final": {True}, "mixed": {False}}[request.param]
    if request.param == "final":
        # data and topic0 are random bytes (their dictionary's indices too) that zstd cannot shrink:
        # the final file stores their data pages uncompressed, as data pages v2 (is_compressed false;
        # the chunk's codec stays zstd), so every engine below reads such pages beside v1 ones.
        # address's indices (50 values) shrink and stay v1. A page header begins with its type, a
        # Thrift i32 field: 0x15, then 0 (DATA_PAGE) or 6 (DATA_PAGE_V2, zigzag). A page under 4 KiB
        # decides nothing: a small last row group's chunks stay compressed.
        raw = output.read_bytes()
        for i in range(md.num_row_groups):
            rg = md.row_group(i)
            assert i == md.num_row_groups - 1 or rg.num_rows >= 1024, "only the last row group is small"
            for c, v2 in ((2, False), (3, rg.num_rows >= 1024), (4, rg.num_rows >= 1024)):
                assert rg.column(c).compression == "ZSTD"
                at = rg.column(c).data_page_offset
                assert raw[at:at + 2] == (b"\x15\x06" if v2 else b"\x15\x00"), (i, c, raw[at:at + 2])
    return output, pa.concat_tables(expected), stats


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


def test_datafusion_skips_row_groups_by_bloom_filter(merged):
    # An address inside every row group's bounds but in none (each filter says
    # so: DuckDB's probe). DataFusion must skip every row group by its bloom
    # filter; it ignores the filters of a column whose Arrow field carries
    # metadata, so the files' "ARROW:schema" has none (docs/formats.md).
    path, expected, _ = merged
    present = set(expected["address"].to_pylist())
    con = duckdb.connect()
    probe = "SELECT bool_and(bloom_filter_excludes) FROM parquet_bloom_probe(?, 'address', ?)"
    seed = expected["address"][123].as_py()
    absent = next(c for c in (seed[:-1] + bytes([k]) for k in range(256))
                  if c not in present and con.execute(probe, [str(path), c]).fetchone()[0])
    ctx = SessionContext()
    ctx.register_parquet("t", str(path))
    plan = "\n".join(ctx.sql(f"EXPLAIN ANALYZE SELECT count(*) FROM t WHERE address = X'{absent.hex()}'")
                     .to_pydict()["plan"])
    groups = pq.ParquetFile(path).metadata.num_row_groups
    assert f"row_groups_pruned_bloom_filter={groups} total → 0 matched" in plan, plan
