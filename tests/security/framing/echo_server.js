// The Node peer of the HTTP/1.1 request-framing differential (tests/security/framing_fuzz.py): Node's own
// http server with its default, strict parser (llhttp; not insecureHTTPParser), answering every request it
// frames 200 with {"method", "path" (req.url, the raw request-target), "body_len", "body_sha256"} over the
// raw body bytes: the same answer as build/http_echo_server.
//
// Three things differ from a bare http.createServer, and none touches the parser:
//  - a parse error (clientError) is answered 400 and the connection closed only after the answers to the
//    requests framed before it have gone out. By default Node destroys the socket at once, and the answers
//    still due (they are written a tick later, when the body's 'end' comes) would be lost: the fuzzer would
//    see fewer requests than Node framed.
//  - a request with an Expect other than 100-continue is echoed too, not answered 417 (framed, but not
//    served), as httplib ignores such an Expect;
//  - httpAllowHalfOpen: a client that half-closes after its last request still gets every answer (by default
//    Node ends the connection when the client's FIN arrives, and answers not yet written are lost).
//
// Usage: node echo_server.js [PORT]: prints "PORT <n>", serves on 127.0.0.1 until stdin closes or SIGTERM.
'use strict';
const crypto = require('crypto');
const http = require('http');

function echo(req, res) {
  const socket = req.socket;
  const hash = crypto.createHash('sha256');
  let length = 0;
  req.on('data', (chunk) => {
    hash.update(chunk);
    length += chunk.length;
  });
  req.on('end', () => {
    const body = JSON.stringify({method: req.method, path: req.url, body_len: length,
      body_sha256: hash.digest('hex')});
    socket.answersDue = (socket.answersDue || 0) + 1;
    res.on('finish', () => {
      socket.answersDue--;
      refuseWhenDone(socket);
    });
    res.writeHead(200, {'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body)});
    res.end(body);
  });
}

const server = http.createServer(echo);
server.on('checkExpectation', echo);  // an Expect other than 100-continue is answered, not 417: as httplib does
server.httpAllowHalfOpen = true;

// After a parse error: once every request whose body was complete has been answered, the status Node's own
// clientError handler would send (400; 431, 413 for overlong heads and chunk extensions), and the close.
// A request still incomplete at the error never completes (the parser is dead): it gets no answer.
function refuseWhenDone(socket) {
  if (!socket.parseError || socket.refused || (socket.answersDue || 0) > 0) return;
  socket.refused = true;
  const status = {HPE_HEADER_OVERFLOW: '431 Request Header Fields Too Large',
    HPE_CHUNK_EXTENSIONS_OVERFLOW: '413 Payload Too Large'}[socket.parseError.code] || '400 Bad Request';
  if (socket.writable) socket.end(`HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
  else socket.destroy();
}

server.on('clientError', (err, socket) => {
  if (socket.parseError) return;  // one refusal per connection; what comes after the error is not parsed
  socket.parseError = err;
  socket.on('error', () => {});
  // The bodies of requests framed before the error end a tick later ('end' goes through nextTick).
  setImmediate(() => refuseWhenDone(socket));
});

server.listen(Number(process.argv[2] || 0), '127.0.0.1', () => {
  process.stdout.write(`PORT ${server.address().port}\n`);
});
process.stdin.on('data', () => {});
process.stdin.on('end', () => process.exit(0));
process.on('SIGTERM', () => process.exit(0));
