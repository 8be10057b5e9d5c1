"""One way to frame a request (RFC 9112; issue 41 item 8): every byte stream is either framed by Sediment's
HTTP server exactly as the parser of Node's http server frames it (the same requests with the same bodies, in
the same order), or refused by Sediment: a 4xx and the connection closed, with nothing after the refusal
answered. Node stands for the proxy or load balancer in front (docs/deploy.md): where the two disagree on
where a request ends, the rest of the stream would run as a request the proxy never saw (request smuggling).

The streams and the verdict are in framing_fuzz.py; Sediment's side is build/http_echo_server (our
HttpServer with echo routes), Node's tests/security/framing/echo_server.js. Nothing is built here: without
build/http_echo_server the Sediment tests are skipped. SEDIMENT_FRAMING_CASES (default 10000) sets the number
of streams, SEDIMENT_FRAMING_SEED (or SEDIMENT_FUZZ_SEED) the seed. Findings go to
build/test-artifacts/security/fuzz-framing-findings.txt."""
import select
import shutil
import subprocess

import pytest

from conftest import ROOT
from security import framing_fuzz
from security.util import artifact, env_int, fuzz_seed, record_line

ECHO_SERVER = ROOT / "build" / "http_echo_server"
NODE_PEER = ROOT / "tests" / "security" / "framing" / "echo_server.js"
CASES = env_int("SEDIMENT_FRAMING_CASES", 10000)
SEED = fuzz_seed("SEDIMENT_FRAMING_SEED", 41)


class Peer:
    """A server that prints `PORT <n>` when it listens; it ends when its stdin closes."""

    def __init__(self, args, log):
        self.log, self._stderr = log, log.open("w")
        self.proc = subprocess.Popen([str(a) for a in args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._stderr, text=True)
        ready = select.select([self.proc.stdout], [], [], 30)[0]
        line = self.proc.stdout.readline() if ready else ""
        if not line.startswith("PORT "):
            self.stop()
            raise RuntimeError(f"{args[0]} did not start ({line!r}):\n{log.read_text()[-3000:]}")
        self.port = int(line.split()[1])

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._stderr.close()


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    if shutil.which("node") is None:
        pytest.skip("node is not installed: the framing differential needs Node's HTTP parser as its peer")
    peer = Peer(["node", NODE_PEER], tmp_path_factory.mktemp("node") / "node.log")
    yield peer
    peer.stop()


@pytest.fixture(scope="module")
def sediment(tmp_path_factory):
    if not ECHO_SERVER.exists():
        pytest.skip(f"{ECHO_SERVER} is not built (the http_echo_server target, built with SEDIMENT_TESTS=ON)")
    peer = Peer([ECHO_SERVER], tmp_path_factory.mktemp("echo") / "http_echo_server.log")
    yield peer
    peer.stop()


def test_the_fuzzer_finds_node_framing_as_node_does(node):
    """The harness itself: the streams, the response parser and the verdict find no difference between Node
    and Node (run without Sediment, so that a broken fuzzer is not taken for a broken server)."""
    result = framing_fuzz.run(framing_fuzz.make_cases(min(CASES, 500), SEED), node.port, node.port)
    assert not result["failures"], "\n\n".join(framing_fuzz.describe(f) for f in result["failures"][:5])
    assert result["same"] > 0 and result["refused"] > 0, result


def post(headers, body, eol=b"\r\n"):
    """A POST to /echo/refused with `headers` (lines without their ending) and `body` as they are."""
    return b"POST /echo/refused HTTP/1.1" + eol + b"".join(h + eol for h in [b"Host: localhost", *headers]) + eol + body


def chunk_size(line):
    return post([b"Transfer-Encoding: chunked"], line + b"\r\nab\r\n0\r\n\r\n")


MUST_REFUSE = {
    "obs-fold transfer-encoding beside content-length": post(
        [b"Content-Length: 5", b"Transfer-Encoding:", b" chunked"], b"0\r\n\r\n"),
    "chunk size 0x2": chunk_size(b"0x2"),
    "chunk size +2": chunk_size(b"+2"),
    "chunk size with a space before": chunk_size(b" 2"),
    "chunk size with a space after": chunk_size(b"2 "),
    "content-length and chunked": post([b"Content-Length: 5", b"Transfer-Encoding: chunked"], b"0\r\n\r\n"),
    "two content-lengths": post([b"Content-Length: 2", b"Content-Length: 2"], b"ab"),
    "content-length +2": post([b"Content-Length: +2"], b"ab"),
    "bare LF line endings": post([b"Content-Length: 2"], b"ab", eol=b"\n"),
    "NUL in a header value": post([b"X-A: a\x00b", b"Content-Length: 2"], b"ab"),
    "transfer-encoding chunked, chunked": post([b"Transfer-Encoding: chunked, chunked"], b"2\r\nab\r\n0\r\n\r\n"),
}


@pytest.mark.parametrize("server", ["sediment", "node"])
@pytest.mark.parametrize("case", list(MUST_REFUSE))
def test_ambiguous_framing_is_refused_with_400_and_the_connection_closed(request, server, case):
    """What RFC 9112 leaves no room for (obs-fold, a chunk size that is not bare hex, Content-Length with
    Transfer-Encoding, ...) gets 400 and the connection closed: the well-formed request after it is not
    answered. Node, the reference, refuses each of them so too."""
    peer = request.getfixturevalue(server)
    stream = MUST_REFUSE[case] + framing_fuzz.SECOND
    result = framing_fuzz.outcome(*framing_fuzz.exchange(peer.port, stream, idle=5.0))  # it closes first
    assert [status for status, _ in result["answers"]] == [400], (case, result)
    assert result["closed_early"] and not result["rest"], f"{case}: the connection stayed open: {result}"


def test_sediment_frames_every_stream_as_node_does_or_refuses_it(node, sediment):
    """The differential: CASES streams (SEED) to both servers; each framed the same or refused by Sediment."""
    cases = framing_fuzz.make_cases(CASES, SEED)
    result = framing_fuzz.run(cases, node.port, sediment.port)
    failures, same, refused = result["failures"], result["same"], result["refused"]
    summary = (f"{CASES} cases, seed {SEED}, {refused} refused by Sediment, {same} framed the same; "
               f"{len(failures)} failures; {result['seconds']:.1f} s")
    print("http framing differential:", summary)
    record_line("fuzz-counts.txt", "http-framing-differential", summary)
    report = artifact("fuzz-framing-findings.txt")
    report.write_text(summary + "\n\n" + "\n\n".join(framing_fuzz.describe(f) for f in failures) + "\n")
    assert sediment.alive(), f"http_echo_server died:\n{sediment.log.read_text()[-3000:]}"
    assert not failures, (f"{len(failures)} of {CASES} streams framed differently (all in {report}); the first:\n"
                          + "\n\n".join(framing_fuzz.describe(f) for f in failures[:5]))
