// ConnectionGate: where the HTTP server's connections wait for a whole
// request head before a worker thread looks at them.
//
// A connection that sends its request line and headers slowly (or sends
// nothing between keep-alive requests) waits here, in one epoll thread, and
// holds no worker; one whose head is not complete within `header_timeout` of
// its first byte is answered 408 and closed, and one that stays idle longer
// than `idle_timeout` is closed. A head larger than `max_header_bytes` is
// answered 431. A connection the server ends after an answer (say, a 413 for
// a body it will not read) lingers: it is half-closed, and what the client
// still sends is dropped for up to 10 s (1 GiB), so the client reads the
// answer instead of a connection reset. Only a connection whose head has fully arrived goes to a
// worker. After its answer the worker waits up to `keep_wait` (2 ms) for the
// connection's next head itself, if another worker is free and no connection
// is queued, and serves it in turn; otherwise it hands the connection back.
// A client's requests in a row then cost one thread wake each, not three; a
// pipelined request still queues behind connections that wait for a worker.
// So slow clients cannot take the workers a health check needs.
//
// Thread-safety: Add() and Resume() may be called from any thread; Shutdown()
// once, from one thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace sediment::server {

// An accepted socket and the bytes read from it that no request has consumed.
struct Connection {
  int fd = -1;
  std::string buffer;
  size_t consumed = 0;  // buffer[0, consumed) is read; the rest is the next request's
  int requests = 0;     // served on this connection so far
  std::chrono::steady_clock::time_point deadline;
  bool awaiting_head = false;  // false: idle between requests (no byte yet)
  size_t scanned = 0;          // how far the buffer was searched for the head's end
  // Closing after our answer: what the client still sends is read and
  // dropped for a moment, so our answer is not lost to a reset.
  bool lingering = false;
  size_t drained = 0;

  size_t Unread() const { return buffer.size() - consumed; }
  // Whether the unread bytes hold a whole request head ("\r\n\r\n").
  bool HasHead();
};

class ConnectionGate {
 public:
  struct Options {
    std::chrono::milliseconds header_timeout{10'000};
    std::chrono::milliseconds idle_timeout{5'000};
    size_t max_header_bytes = 64 << 10;
    size_t max_connections = 4096;
    size_t workers = 8;
    // After an answer, a worker waits this long for the connection's next
    // request itself (while another worker is free) before handing it back:
    // a client's requests in a row then cost one thread wake each, not three.
    std::chrono::microseconds keep_wait{2'000};
  };
  // Serves one request of `c` (its head is buffered). Returns whether the
  // connection may carry another request.
  using Serve = std::function<bool(Connection& c)>;

  ConnectionGate(Options options, Serve serve);
  ~ConnectionGate();
  ConnectionGate(const ConnectionGate&) = delete;
  ConnectionGate& operator=(const ConnectionGate&) = delete;

  // A newly accepted socket (the gate owns it from now on).
  void Add(int fd);
  // Stops taking connections, closes the waiting ones, lets workers finish
  // the requests they have, and joins every thread.
  void Shutdown();
  bool stopping() const;
  // Workers waiting for a connection to serve (for tests).
  size_t idle_workers() const;

 private:
  void GateLoop();
  // REQUIRES: called on the gate thread (these three).
  void Readable(int fd);
  void SweepDeadlines();
  // Stops watching the connection: to a worker, or closed (after `reply`, if any).
  void Forget(std::map<int, std::unique_ptr<Connection>>::iterator it, const char* reply, bool to_workers);
  void WorkerLoop();
  // Serves `c`'s requests while each next head arrives within keep_wait;
  // returns whether the connection may carry another request.
  bool ServeInTurn(Connection& c);
  // Reads `c` until a whole head is buffered (true) or keep_wait passes, the
  // peer closes, or the head grows past max_header_bytes (false: the gate
  // takes it from there). REQUIRES: called on the worker that holds `c`.
  bool AwaitHead(Connection& c);
  // Back to the gate for its next request, or to linger before closing (from a worker).
  void Resume(std::unique_ptr<Connection> c, bool linger);
  // REQUIRES: called on the gate thread.
  void Watch(std::unique_ptr<Connection> c);
  void ToWorkers(std::unique_ptr<Connection> c);
  void Close(std::unique_ptr<Connection> c, const char* reply);
  void Wake();

  const Options options_;
  const Serve serve_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  int stop_fd_ = -1;  // readable once Shutdown() began: ends workers' waits

  mutable std::mutex mu_;
  bool stopping_ = false;                              // GUARDED_BY(mu_)
  std::vector<std::unique_ptr<Connection>> incoming_;  // GUARDED_BY(mu_): for the gate thread
  std::deque<std::unique_ptr<Connection>> ready_;      // GUARDED_BY(mu_): for the workers
  size_t open_ = 0;                                    // GUARDED_BY(mu_): connections the gate owns
  size_t idle_workers_ = 0;                            // GUARDED_BY(mu_): waiting for ready_
  std::condition_variable ready_cv_;

  std::map<int, std::unique_ptr<Connection>> waiting_;  // gate thread only
  std::thread gate_thread_;
  std::vector<std::thread> workers_;
};

}  // namespace sediment::server
