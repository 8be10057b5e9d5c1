"""Clients of the query server (docs/query.md) for the tests and the benchmark: JSON lines over HTTP,
Flight SQL through ADBC (batch) and through pyarrow's Flight client (streams: ADBC does not show a
batch's app_metadata), and the client side of a stream (rows applied as Amp's reorg rules say)."""
import base64
import json

import adbc_driver_flightsql.dbapi as flightsql
import pyarrow.flight as flight
import requests

STATEMENT_QUERY = b"type.googleapis.com/arrow.flight.protocol.sql.CommandStatementQuery"


def _field(number, value):
    def varint(n):
        out = b""
        while n >= 0x80:
            out += bytes([(n & 0x7F) | 0x80])
            n >>= 7
        return out + bytes([n])
    return varint(number << 3 | 2) + varint(len(value)) + value


def statement_query(sql):
    """A Flight descriptor command as Flight SQL clients send it: Any(CommandStatementQuery{query})."""
    return _field(1, STATEMENT_QUERY) + _field(2, _field(1, sql.encode()))


def adbc(server, auth=None):
    """A Flight SQL connection through ADBC's driver (access key as username and password)."""
    kw = {"db_kwargs": {"username": auth[0], "password": auth[1]}} if auth else {}
    return flightsql.connect(f"grpc://127.0.0.1:{server.query_ports['flight']}", autocommit=True, **kw)


def adbc_query(server, sql, auth=None):
    with adbc(server, auth) as conn, conn.cursor() as cur:
        cur.execute(sql)
        return cur.fetch_arrow_table()


def jsonl(server, sql, headers=None, auth=None, stream=False, api_port=False, timeout=60):
    url = (server.url + "/api/v1/query") if api_port else f"http://127.0.0.1:{server.query_ports['jsonl']}/"
    return requests.post(url, data=sql.encode(), headers=headers or {}, auth=auth, stream=stream, timeout=timeout)


def jsonl_rows(server, sql, **kw):
    r = jsonl(server, sql, **kw)
    assert r.status_code == 200, r.text
    assert r.headers["Content-Type"] == "application/x-ndjson"
    return [json.loads(line) for line in r.text.splitlines() if line]


class FlightStream:
    """A streaming query over Flight: its chunks as (table or None, metadata dict)."""

    def __init__(self, server, sql, resume=None, auth=None, header_stream=True):
        self.client = flight.FlightClient(f"grpc://127.0.0.1:{server.query_ports['flight']}")
        headers = [(b"amp-stream", b"true")] if header_stream else []
        if resume is not None:
            headers.append((b"amp-resume", json.dumps(resume).encode()))
        if auth:
            basic = base64.b64encode(f"{auth[0]}:{auth[1]}".encode())
            headers.append((b"authorization", b"Basic " + basic))
        self.options = flight.FlightCallOptions(headers=headers)
        info = self.client.get_flight_info(flight.FlightDescriptor.for_command(statement_query(sql)), self.options)
        self.schema = info.schema
        self.reader = self.client.do_get(info.endpoints[0].ticket, self.options)

    def chunks(self):
        for chunk in self.reader:
            meta = json.loads(chunk.app_metadata.to_pybytes()) if chunk.app_metadata else {}
            yield chunk.data, meta

    def close(self):
        self.reader.cancel()
        self.client.close()


class StreamClient:
    """A client of a stream: rows by block, applied as Amp says (a range that starts at or before a block
    already received, or flagged `reorg`, drops every row from its start first); the cursor is the last
    complete range's end."""

    def __init__(self, network):
        self.network = network
        self.rows = {}  # block -> [row, ...]
        self.cursor = None  # {"number", "hash"} of the last complete range
        self.reorgs = 0
        self.ranges = []  # complete ranges, in order
        self._open = None  # the range whose rows are arriving

    def _begin(self, rng, reorg):
        start = rng["numbers"]["start"]
        last = self.cursor["number"] if self.cursor else None
        if reorg or (last is not None and start <= last):
            self.reorgs += 1
            for b in [b for b in self.rows if b >= start]:
                del self.rows[b]
        self._open = rng

    def apply(self, rows, meta):
        """One chunk: rows (dicts with block_num) and its metadata."""
        ranges = meta.get("ranges") or []
        if not ranges:
            return  # a keep-alive, or a batch query's end
        rng = ranges[0]
        assert rng["network"] == self.network
        if meta.get("ranges_complete") and self.ranges and rng == self.ranges[-1] and self._open is None:
            return  # the last range again: a keep-alive (Amp's watermark)
        if self._open is None or self._open["numbers"] != rng["numbers"] or self._open["hash"] != rng["hash"]:
            self._begin(rng, meta.get("reorg", False))
        for row in rows:
            assert rng["numbers"]["start"] <= row["block_num"] <= rng["numbers"]["end"], (row, rng)
            self.rows.setdefault(row["block_num"], []).append(row)
        if meta.get("ranges_complete"):
            self.cursor = {"number": rng["numbers"]["end"], "hash": rng["hash"]}
            self.ranges.append(rng)
            self._open = None

    def sorted_rows(self, upto):
        out = []
        for b in sorted(self.rows):
            if b <= upto:
                out.extend(self.rows[b])
        return sorted(out, key=lambda r: json.dumps(r, sort_keys=True, default=str))
