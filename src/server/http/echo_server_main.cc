// http_echo_server: our HttpServer (http_server.h: the connection gate and all its framing rules) with echo
// routes only, for the HTTP/1.1 request-framing differential against Node's http server (issue 41 item 8;
// tests/security/framing_fuzz.py). Every request it frames is answered 200 with {"method", "path" (the raw
// request-target), "body_len", "body_sha256"}: where Sediment thinks each request and its body end.
// Usage: http_echo_server [PORT] (default 0, any free one): prints "PORT <n>", serves on 127.0.0.1 until
// stdin closes or SIGTERM/SIGINT.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "base/crypto.h"
#include "base/logging.h"
#include "base/metrics.h"
#include "server/http/http_server.h"

namespace {

// Bytes as Latin-1 code points: what Node shows of a request-target, and always valid UTF-8 in JSON.
std::string Latin1(const std::string& bytes) {
  std::string out;
  for (unsigned char c : bytes) {
    if (c >= 0x80) {
      out += static_cast<char>(0xC0 | (c >> 6));
      c = 0x80 | (c & 0x3F);
    }
    out += static_cast<char>(c);
  }
  return out;
}

void Echo(const httplib::Request& req, httplib::Response& res, const std::string& body) {
  nlohmann::json j = {{"method", Latin1(req.method)},
                      {"path", Latin1(req.target.empty() ? req.path : req.target)},
                      {"body_len", body.size()},
                      {"body_sha256", sediment::Sha256Hex(body)}};
  res.status = 200;
  res.set_content(j.dump(), "application/json");
}

// A streamed upload's route: the body read through the ContentReader.
void Streamed(const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader) {
  std::string body;
  auto append = [&](const char* data, size_t n) {
    body.append(data, n);
    return true;
  };
  if (!reader(append)) {
    res.status = 400;  // as a real upload handler answers; closing the connection is the server's business
    res.set_content("the request body was cut off\n", "text/plain");
    return;
  }
  Echo(req, res, body);
}

}  // namespace

int main(int argc, char** argv) {
  int port = argc > 1 ? std::atoi(argv[1]) : 0;
  (void)sediment::SetupLogging("warn", "text");  // stderr; stdout carries only the PORT line
  // Blocked before any thread starts, so in every thread: they come to sigwait() below.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  ::signal(SIGPIPE, SIG_IGN);  // a client gone mid-answer is no reason to die
  sediment::MetricsRegistry metrics;
  sediment::server::HttpLimits limits;
  limits.max_body_bytes = 1 << 20;
  limits.host_allowed = nullptr;  // any Host
  sediment::server::HttpServer http(&metrics, limits);
  auto buffered = [](const httplib::Request& req, httplib::Response& res) { Echo(req, res, req.body); };
  // Any other target too (absolute-form, a path a mutation changed): a 404 must not stand in for an answer.
  for (const char* method : {"GET", "POST", "PUT", "DELETE", "PATCH"}) {
    http.Handle(method, "/echo/.*", "echo", buffered);
    http.Handle(method, "[\\s\\S]*", "echo_other", buffered);
  }
  for (const char* method : {"POST", "PUT"}) http.HandleStream(method, "/stream/.*", "stream", Streamed);
  if (auto st = http.Bind("127.0.0.1", port); !st.ok()) {
    std::fprintf(stderr, "http_echo_server: %s\n", st.ToString().c_str());
    return 1;
  }
  http.Start();
  std::printf("PORT %d\n", http.port());
  std::fflush(stdout);
  std::thread([] {  // stdin closing (the test runner gone) ends the server too
    char buf[256];
    while (::read(0, buf, sizeof(buf)) > 0) continue;
    ::kill(::getpid(), SIGTERM);
  })
      .detach();
  int sig;
  ::sigwait(&stop, &sig);
  http.Stop();
}
