#!/usr/bin/env python3
"""Fixed-size binary stored as FIXED_LEN_BYTE_ARRAY or as BYTE_ARRAY: `address =` in DuckDB, Polars and
DataFusion, one thread each (issue 46). The same rows (a compaction_bench.py shape's inputs) written twice by
pyarrow (zstd 1, row groups of 131,072 rows, dictionaries, page index), once with the binary columns as
fixed_size_binary and once as binary; median of 7.

Usage: POLARS_MAX_THREADS=1 .venv/bin/python bench/binary_types_probe.py <dir of input parquet files> <out dir>
"""
import glob
import sys

import datafusion
import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from timing import median_ms


def as_variable_binary(table):
    """The table with its fixed-size binary columns as variable binary (Parquet BYTE_ARRAY)."""
    cols = [c.cast(pa.binary()) if pa.types.is_fixed_size_binary(f.type) else c
            for f, c in zip(table.schema, table.columns)]
    return pa.table(cols, names=table.column_names)


def main():
    inputs, out = sys.argv[1], sys.argv[2]
    table = pa.concat_tables([pq.read_table(f) for f in sorted(glob.glob(f"{inputs}/*.parquet"))])
    paths = {"FIXED_LEN_BYTE_ARRAY": f"{out}/flba.parquet", "BYTE_ARRAY": f"{out}/bytearray.parquet"}
    for kind, path in paths.items():
        pq.write_table(table if kind == "FIXED_LEN_BYTE_ARRAY" else as_variable_binary(table), path,
                       row_group_size=131072, compression="zstd", compression_level=1, write_page_index=True)
    addr = table["address"][table.num_rows // 2].as_py()
    width = len(addr)
    con = duckdb.connect(config={"threads": 1})
    ctx = datafusion.SessionContext(datafusion.SessionConfig().with_target_partitions(1))
    print("| stored as | DuckDB ms | Polars ms | DataFusion ms |")
    print("| --- | --- | --- | --- |")
    for kind, path in paths.items():
        name = "flba" if kind == "FIXED_LEN_BYTE_ARRAY" else "bytearray"
        ctx.register_parquet(name, path)
        literal = f"X'{addr.hex()}'" if name == "bytearray" else \
            f"arrow_cast(X'{addr.hex()}', 'FixedSizeBinary({width})')"
        counts = set()
        d = median_ms(lambda: counts.add(con.execute(
            f"SELECT count(*) FROM read_parquet('{path}') WHERE address = from_hex('{addr.hex()}')").fetchall()[0][0]))
        p = median_ms(lambda: counts.add(
            pl.scan_parquet(path).filter(pl.col("address") == addr).select(pl.len()).collect().item()))
        f = median_ms(lambda: counts.add(
            ctx.sql(f"SELECT count(*) FROM {name} WHERE address = {literal}").collect()[0].column(0)[0].as_py()))
        assert len(counts) == 1, f"the engines disagree on {kind}: {counts}"
        print(f"| {kind} | {d:.1f} | {p:.1f} | {f:.1f} |")


if __name__ == "__main__":
    main()
