// The Node peer of the HTTP/1.1 request-framing differential (tests/security/framing_fuzz.py): what Node's
// request parser frames in a connection's bytes. The parser is the one Node's http server runs (llhttp through
// its HTTPParser binding, set up as the server sets it up: strict, not insecureHTTPParser, the default head
// limit), fed every byte the connection brings. Each request it frames is answered in order, 200 with
// {"method", "path" (the raw request-target), "body_len", "body_sha256"} over the raw body bytes: the same
// answer as build/http_echo_server. At a parse error: 400 (431, 413 for an overlong head or chunk
// extensions, as Node's server answers) and the connection closed; a request still incomplete gets no answer.
//
// Not http.createServer: the framing the fuzzer sees must not hang on when the server answers. Node's server
// destroys the connection at a parse error, and a pipelined request its parser had already framed (its
// 'request' not yet handled) goes unanswered. Also left out are the server's rules above framing: every
// framed request is echoed (no 417 for an unknown Expect, no 400 for a missing Host).
//
// Usage: node echo_server.js [PORT]: prints "PORT <n>", serves on 127.0.0.1 until stdin closes or SIGTERM.
'use strict';
const crypto = require('crypto');
const net = require('net');

// process.binding('http_parser') warns once (DEP0111, access to an internal binding); that warning only is
// silenced. allMethods maps the parser's method numbers to names, as Node's server maps them.
const {HTTPParser, allMethods} = (() => {
  const emitWarning = process.emitWarning;
  process.emitWarning = () => {};
  try {
    return process.binding('http_parser');
  } finally {
    process.emitWarning = emitWarning;
  }
})();

function respond(socket, status, body = '', close = false) {
  if (socket.writable) {
    socket.write(`HTTP/1.1 ${status}\r\nContent-Type: application/json\r\nContent-Length: ` +
      `${Buffer.byteLength(body)}\r\nConnection: ${close ? 'close' : 'keep-alive'}\r\n\r\n${body}`);
  }
}

function serve(socket) {
  socket.on('error', () => {});  // a client gone is no reason to die
  const parser = new HTTPParser();
  parser.initialize(HTTPParser.REQUEST, {}, 0, HTTPParser.kLenientNone);  // 0: --max-http-header-size
  let url = '';  // the target of a head that comes in parts (split across reads, or over 32 header lines)
  let request = null;  // the request being framed
  let done = false;  // no more requests are framed: what follows is read and dropped

  // No more requests on this connection: the parse `error`, if any, answered, then the connection closed.
  function stop(error) {
    if (done) return;
    done = true;
    if (error) {
      const status = {HPE_HEADER_OVERFLOW: '431 Request Header Fields Too Large',
        HPE_CHUNK_EXTENSIONS_OVERFLOW: '413 Payload Too Large'}[error.code] || '400 Bad Request';
      respond(socket, status, '', true);
    }
    socket.end();
  }

  parser[HTTPParser.kOnHeaders] = (headers, part) => {
    url += part;
  };
  parser[HTTPParser.kOnHeadersComplete] = (major, minor, headers, method, target, status, message, upgrade,
    keepAlive) => {
    // keepAlive is llhttp's: HTTP/1.1 unless "Connection: close", HTTP/1.0 only with "Connection: keep-alive".
    request = {method: allMethods[method], path: target === undefined ? url : target, length: 0,
      hash: crypto.createHash('sha256'), last: !keepAlive || upgrade};
    url = '';
    return 0;  // a body, if framed, follows (1 would skip it: a HEAD's response; 2 is an upgrade taken)
  };
  parser[HTTPParser.kOnBody] = (chunk) => {
    request.hash.update(chunk);
    request.length += chunk.length;
  };
  parser[HTTPParser.kOnMessageComplete] = () => {
    if (done) return;
    const {method, path, length, hash, last} = request;
    respond(socket, '200 OK', JSON.stringify({method, path, body_len: length, body_sha256: hash.digest('hex')}),
      last);
    // After a request that ends the connection (or an upgrade) Node's server reads no more requests, and
    // strict llhttp takes any byte after it but CR, LF for an error: the connection ends here, unrefused.
    if (last) stop();
  };

  socket.on('data', (data) => {
    if (done) return;
    const ret = parser.execute(data);
    if (ret instanceof Error) stop(ret);
    else if (ret < data.length) stop();  // the parser stopped short of the data, not at an error: an upgrade
  });
  // The client half-closed: a request cut short is a parse error (strict llhttp, "Invalid EOF state").
  socket.on('end', () => {
    const ret = done ? undefined : parser.finish();
    stop(ret instanceof Error ? ret : undefined);
  });
  socket.on('close', () => parser.close());
}

// allowHalfOpen: the client's FIN does not end our side; stop() does, after the answers.
const server = net.createServer({allowHalfOpen: true}, serve);
server.listen(Number(process.argv[2] || 0), '127.0.0.1', () => {
  process.stdout.write(`PORT ${server.address().port}\n`);
});
process.stdin.on('data', () => {});
process.stdin.on('end', () => process.exit(0));
process.on('SIGTERM', () => process.exit(0));
