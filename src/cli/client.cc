#include "cli/client.h"

#include <fmt/format.h>
#include <httplib.h>

#include <cstdio>
#include <cstdlib>

#include "base/crypto.h"

namespace sediment::cli {
namespace {

Status FromResponse(const std::string& url, const httplib::Result& res) {
  if (!res) return Unavailable(fmt::format("cannot reach {}: {}", url, httplib::to_string(res.error())));
  if (res->status >= 200 && res->status < 300) return Status::OK();
  std::string message = res->body;
  auto j = nlohmann::json::parse(res->body, nullptr, false);
  if (!j.is_discarded() && j.is_object() && j.contains("message")) message = j["message"].get<std::string>();
  if (res->status == 401) {
    const char* key = std::getenv("SEDIMENT_ACCESS_KEY_ID");
    const char* secret = std::getenv("SEDIMENT_SECRET_ACCESS_KEY");
    bool have = key != nullptr && *key != '\0' && secret != nullptr && *secret != '\0';
    message += have ? " (the access key in SEDIMENT_ACCESS_KEY_ID and SEDIMENT_SECRET_ACCESS_KEY was refused)"
                    : " (the server is set up: set SEDIMENT_ACCESS_KEY_ID and SEDIMENT_SECRET_ACCESS_KEY to an access "
                      "key, e.g. the one `sediment setup` printed)";
  }
  return Status::IOError(fmt::format("HTTP {}: {}", res->status, message));
}

Result<nlohmann::json> ParseBody(const std::string& body) {
  if (body.empty()) return nlohmann::json::object();
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded()) return nlohmann::json(body);  // a plain-text answer (e.g. a commit id)
  return j;
}

}  // namespace

std::string DefaultServerUrl() {
  const char* env = std::getenv("SEDIMENT_URL");
  return env != nullptr && *env != '\0' ? env : "http://127.0.0.1:8000";
}

void AddServerOption(CLI::App* command, std::string* url) {
  command->add_option("--server", *url, "Server URL (default $SEDIMENT_URL or http://127.0.0.1:8000)");
}

Client::Client(std::string base_url) : base_url_(std::move(base_url)) {
  while (!base_url_.empty() && base_url_.back() == '/') base_url_.pop_back();
  const char* key = std::getenv("SEDIMENT_ACCESS_KEY_ID");
  const char* secret = std::getenv("SEDIMENT_SECRET_ACCESS_KEY");
  if (key != nullptr && secret != nullptr) SetCredentials(key, secret);
}

void Client::SetCredentials(std::string access_key_id, std::string secret_access_key) {
  access_key_id_ = std::move(access_key_id);
  secret_access_key_ = std::move(secret_access_key);
}

std::unique_ptr<httplib::Client> Client::Connect(int read_timeout_s) {
  auto c = std::make_unique<httplib::Client>(base_url_);
  if (base_url_.rfind("https://", 0) == 0) c->set_ca_cert_path(SystemCaBundle());  // see SystemCaBundle
  c->set_read_timeout(read_timeout_s);
  c->set_tcp_nodelay(true);
  if (!access_key_id_.empty()) c->set_basic_auth(access_key_id_.c_str(), secret_access_key_.c_str());
  return c;
}

Result<nlohmann::json> Client::GetAllPages(const std::string& path, const std::string& key) {
  nlohmann::json all = nlohmann::json::array();
  std::string after;
  const char* sep = path.find('?') == std::string::npos ? "?" : "&";
  while (true) {
    std::string url = path + sep + "amount=10000" + (after.empty() ? "" : "&after=" + after);
    ARROW_ASSIGN_OR_RAISE(nlohmann::json j, Get(url));
    for (auto& item : j[key]) all.push_back(std::move(item));
    if (!j.contains("pagination") || !j["pagination"].value("has_more", false)) break;
    after = j["pagination"]["next_offset"].get<std::string>();
  }
  return nlohmann::json{{key, std::move(all)}};
}

Result<nlohmann::json> Client::Get(const std::string& path) { return Send("GET", path); }

Result<nlohmann::json> Client::Post(const std::string& path, const std::string& body, const std::string& type) {
  return Send("POST", path, body, type);
}

Result<nlohmann::json> Client::Send(const std::string& method, const std::string& path, const std::string& body,
                                    const std::string& type) {
  auto c = Connect(3600);
  httplib::Result res = method == "GET"      ? c->Get(path)
                        : method == "POST"   ? c->Post(path, body, type)
                        : method == "PUT"    ? c->Put(path, body, type)
                        : method == "DELETE" ? c->Delete(path, body, type)
                                             : httplib::Result(nullptr, httplib::Error::Unknown);
  ARROW_RETURN_NOT_OK(FromResponse(base_url_, res));
  return ParseBody(res->body);
}

Result<std::string> Client::GetRaw(const std::string& path) {
  auto c = Connect(3600);
  auto res = c->Get(path);
  ARROW_RETURN_NOT_OK(FromResponse(base_url_, res));
  return std::move(res->body);
}

Status Client::StreamLines(const std::string& method, const std::string& path,
                           const std::function<bool(const std::string&)>& on_line) {
  auto client = Connect(3600);
  httplib::Client& c = *client;
  std::string pending, error_body;
  int status = 0;
  httplib::Request req;
  req.method = method;
  bool stopped = false;
  req.path = path;
  req.response_handler = [&](const httplib::Response& r) {
    status = r.status;
    return true;
  };
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    if (status >= 300) {
      error_body.append(data, n);
      return true;
    }
    pending.append(data, n);
    size_t pos;
    while ((pos = pending.find('\n')) != std::string::npos) {
      if (!on_line(pending.substr(0, pos))) {
        stopped = true;
        return false;
      }
      pending.erase(0, pos + 1);
    }
    return true;
  };
  auto res = c.send(req);
  if (stopped) return Status::OK();
  if (!res) return Unavailable(fmt::format("cannot reach {}: {}", base_url_, httplib::to_string(res.error())));
  if (status >= 300) {
    res->body = error_body;
    return FromResponse(base_url_, res);
  }
  if (!pending.empty()) on_line(pending);
  return Status::OK();
}

int Run(const std::function<Status()>& body) {
  Status st = body();
  if (st.ok()) return 0;
  std::fprintf(stderr, "sediment: %s\n", st.message().c_str());
  return 1;
}

}  // namespace sediment::cli
