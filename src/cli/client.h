// A small HTTP client for the CLI's commands that talk to a running server.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "base/status.h"

namespace httplib {
class Client;
}

namespace sediment::cli {

// The server to talk to: --server, else $SEDIMENT_URL, else http://127.0.0.1:8000.
std::string DefaultServerUrl();
// Adds --server to a command, writing to `*url` (which should hold DefaultServerUrl()).
void AddServerOption(CLI::App* command, std::string* url);

class Client {
 public:
  // Credentials for the catalog API come from $SEDIMENT_ACCESS_KEY_ID and
  // $SEDIMENT_SECRET_ACCESS_KEY unless set with SetCredentials.
  explicit Client(std::string base_url);
  void SetCredentials(std::string access_key_id, std::string secret_access_key);
  Result<nlohmann::json> Get(const std::string& path);
  // Every page of a paged listing of the tables API (`key`: "files", "tables", "appends"), joined as {key: [...]}.
  Result<nlohmann::json> GetAllPages(const std::string& path, const std::string& key);
  // Any method; a JSON (or empty) response body.
  Result<nlohmann::json> Send(const std::string& method, const std::string& path, const std::string& body = "",
                              const std::string& content_type = "application/json");
  // The raw response body of a GET (object downloads).
  Result<std::string> GetRaw(const std::string& path);
  Result<nlohmann::json> Post(const std::string& path, const std::string& body = "",
                              const std::string& content_type = "application/json");
  // Streams a response line by line (JSON lines); on_line returns false to stop.
  Status StreamLines(const std::string& method, const std::string& path,
                     const std::function<bool(const std::string&)>& on_line);
  Status PostLines(const std::string& path, const std::function<void(const std::string&)>& on_line) {
    return StreamLines("POST", path, [&](const std::string& l) {
      on_line(l);
      return true;
    });
  }

 private:
  std::unique_ptr<httplib::Client> Connect(int read_timeout_s);
  std::string base_url_;
  std::string access_key_id_, secret_access_key_;
};

// Runs a command body, printing "sediment: <message>" and returning 1 on error.
int Run(const std::function<Status()>& body);

}  // namespace sediment::cli
