"""Helpers for table tests: Arrow IPC bodies and a chain of block hashes."""
import hashlib

import pyarrow as pa

SCHEMA = pa.schema([
    pa.field("block_num", pa.uint64(), nullable=False),
    pa.field("log_index", pa.int32()),
    pa.field("address", pa.binary(20)),
    pa.field("data", pa.binary()),
    pa.field("value", pa.int64()),
])


def block_hash(block, fork=0):
    return hashlib.sha256(f"{block}/{fork}".encode()).hexdigest()


def rows(start, end, per_block=3, fork=0, schema=SCHEMA):
    blocks, idx, addr, data, value = [], [], [], [], []
    for b in range(start, end + 1):
        for i in range(per_block):
            blocks.append(b)
            idx.append(i)
            addr.append(hashlib.sha1(f"{b}/{i}/{fork}".encode()).digest())
            data.append(bytes([b % 256]) * (10 + (b * 7 + i) % 50))
            value.append(b * 1000 + i + fork * 1_000_000)
    return pa.record_batch([pa.array(blocks, pa.uint64()), pa.array(idx, pa.int32()),
                            pa.array(addr, pa.binary(20)), pa.array(data, pa.binary()),
                            pa.array(value, pa.int64())], schema=schema)


def ipc(*batches, schema=SCHEMA, block_hashes=None):
    """An Arrow IPC stream; block_hashes (hex, the segment's last blocks) go in
    the schema metadata as sediment.block_hashes."""
    if block_hashes:
        schema = schema.with_metadata({"sediment.block_hashes": ",".join(block_hashes)})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, schema) as w:
        for b in batches:
            w.write_batch(b)
    return sink.getvalue().to_pybytes()


def append(server, table, start, end, fork=0, parent_fork=None, per_block=3, body=None, ds="eth",
           parent_hash=None, force=None):
    """Appends blocks [start, end] of `fork` with every block's hash, as a chain indexer does."""
    parent_fork = fork if parent_fork is None else parent_fork
    params = {"start_block": start, "end_block": end, "end_hash": block_hash(end, fork),
              "parent_hash": parent_hash or block_hash(start - 1, parent_fork)}
    if force is not None:
        params["force"] = force
    if body is None:
        body = ipc(rows(start, end, per_block, fork),
                   block_hashes=[block_hash(b, fork) for b in range(start, end + 1)])
    return server.post(f"/api/v1/datasets/{ds}/tables/{table}/segments", params=params, data=body)
