// ServerIdentity: a name for this server that survives restarts, so a server
// that crashed and came back reclaims its own table compaction leases at
// once instead of waiting lease_ttl for them to expire.
//
// The name lives in <data_dir>/server-id, created once ("<host>-<random>")
// and locked (flock) for the life of the process. A second process on the same
// data directory — possible with a shared PostgreSQL database, where RocksDB's
// own lock does not apply — cannot take the lock and gets a fresh name of its
// own for this run, so two live processes never share a name (and a lease).
//
// Thread-safety: immutable after Claim.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"

namespace sediment::server {

class ServerIdentity {
 public:
  // Never fails for lack of a data directory: then the name is fresh for
  // this run (stable() is false) and the reason is logged.
  static std::unique_ptr<ServerIdentity> Claim(const std::string& data_dir);
  ~ServerIdentity();
  ServerIdentity(const ServerIdentity&) = delete;
  ServerIdentity& operator=(const ServerIdentity&) = delete;

  const std::string& id() const { return id_; }
  // True if the name is this data directory's and survives a restart.
  bool stable() const { return fd_ >= 0; }

 private:
  ServerIdentity(std::string id, int fd) : id_(std::move(id)), fd_(fd) {}
  const std::string id_;
  const int fd_;  // holds the flock; -1 if the name is for this run only
};

}  // namespace sediment::server
