#include "server/query/flight_server.h"

#include <arrow/flight/api.h>
#include <arrow/ipc/writer.h>
#include <fmt/format.h>
#include <httplib.h>
#include <spdlog/spdlog.h>

#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "auth/auth.h"
#include "base/codec.h"
#include "base/crypto.h"
#include "server/http/route.h"
#include "server/query/amp_format.h"
#include "server/query/flight_sql_proto.h"
#include "server/query/query_api.h"

namespace sediment::server {

namespace flight = arrow::flight;
using nlohmann::json;

namespace {

constexpr auto kTokenTtl = std::chrono::hours(12);

// A Status in gRPC's terms (the Flight transport maps Arrow's codes; ours carry a domain code).
Status ToFlight(const Status& st) {
  if (st.ok()) return st;
  if (IsUnauthorized(st)) return flight::MakeFlightError(flight::FlightStatusCode::Unauthenticated, st.message());
  if (IsForbidden(st)) return flight::MakeFlightError(flight::FlightStatusCode::Unauthorized, st.message());
  if (IsBusy(st) || IsUnavailable(st)) {
    return flight::MakeFlightError(flight::FlightStatusCode::Unavailable, st.message());
  }
  if (IsNotFound(st)) return Status::KeyError(st.message());
  if (IsInvalidArgument(st)) return Status::Invalid(st.message());
  if (st.IsCancelled()) return flight::MakeFlightError(flight::FlightStatusCode::Cancelled, st.message());
  return st;
}

// The first value of a call's header `name` (gRPC metadata keys are lowercase).
std::string Header(const flight::ServerCallContext& context, const std::string& name) {
  const auto& headers = context.incoming_headers();
  auto it = headers.find(name);
  return it == headers.end() ? std::string() : std::string(it->second);
}

// What DoGet is given back: the statement and what GetFlightInfo read from its headers.
struct TicketContents {
  std::string sql;
  bool stream = false;
  std::string resume;  // amp-resume as sent
  std::string id;      // the run GetFlightInfo started for it (Handoffs), if any
};

std::string EncodeTicket(const TicketContents& t) {
  return json{{"v", 1}, {"sql", t.sql}, {"stream", t.stream}, {"resume", t.resume}, {"id", t.id}}.dump();
}

// Batch queries GetFlightInfo started, for the DoGet of their ticket to take:
// one engine start and one pinned snapshot per query, not two. A run no DoGet
// takes within kHandoffTtl is cancelled (its slot freed).
class Handoffs {
 public:
  static constexpr auto kHandoffTtl = std::chrono::seconds(30);
  std::string Put(const std::string& user, const std::string& sql, std::unique_ptr<query::QueryRun> run) {
    std::string id = RandomHex(16);
    std::lock_guard<std::mutex> lock(mu_);
    Reap();
    pending_[id] = Pending{user, sql, std::move(run), std::chrono::steady_clock::now() + kHandoffTtl};
    return id;
  }
  // The run left under `id` for `user` and `sql`; null if there is none (expired, or another's).
  std::unique_ptr<query::QueryRun> Take(const std::string& id, const std::string& user, const std::string& sql) {
    std::lock_guard<std::mutex> lock(mu_);
    Reap();
    auto it = pending_.find(id);
    if (it == pending_.end() || it->second.user != user || it->second.sql != sql) return nullptr;
    auto run = std::move(it->second.run);
    pending_.erase(it);
    return run;
  }

 private:
  struct Pending {
    std::string user, sql;
    std::unique_ptr<query::QueryRun> run;
    std::chrono::steady_clock::time_point expires;
  };
  void Reap() {
    auto now = std::chrono::steady_clock::now();
    for (auto it = pending_.begin(); it != pending_.end();) {
      it = it->second.expires < now ? pending_.erase(it) : std::next(it);
    }
  }
  std::mutex mu_;
  std::map<std::string, Pending> pending_;  // GUARDED_BY(mu_)
};

Result<TicketContents> DecodeTicket(const std::string& text, size_t max_bytes) {
  if (text.size() > max_bytes + 4096) return InvalidArgument("TICKET_DECODING_ERROR: the ticket is too large");
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || j.value("v", 0) != 1 || !j.contains("sql") || !j["sql"].is_string() ||
      !j.contains("stream") || !j["stream"].is_boolean() || !j.contains("resume") || !j["resume"].is_string()) {
    return InvalidArgument("TICKET_DECODING_ERROR: the ticket is not one this server issued");
  }
  std::string id = j.contains("id") && j["id"].is_string() ? j["id"].get<std::string>() : "";
  return TicketContents{j["sql"].get<std::string>(), j["stream"].get<bool>(), j["resume"].get<std::string>(), id};
}

Result<flight::FlightPayload> BatchPayload(const arrow::RecordBatch& batch, const std::string& metadata) {
  flight::FlightPayload payload;
  ARROW_RETURN_NOT_OK(
      arrow::ipc::GetRecordBatchPayload(batch, arrow::ipc::IpcWriteOptions::Defaults(), &payload.ipc_message));
  payload.app_metadata = arrow::Buffer::FromString(metadata);
  return payload;
}

// The stream's schema message first (every FlightDataStream's).
Result<flight::FlightPayload> SchemaPayload(const arrow::Schema& schema) {
  flight::FlightPayload payload;
  arrow::ipc::DictionaryFieldMapper mapper(schema);
  ARROW_RETURN_NOT_OK(
      arrow::ipc::GetSchemaPayload(schema, arrow::ipc::IpcWriteOptions::Defaults(), mapper, &payload.ipc_message));
  return payload;
}

// A batch query's rows, then an empty batch whose metadata says the ranges are complete.
class RunStream final : public flight::FlightDataStream {
 public:
  RunStream(std::unique_ptr<query::QueryRun> run, std::shared_ptr<arrow::Schema> schema,
            const flight::ServerCallContext* context)
      : run_(std::move(run)), schema_(std::move(schema)), context_(context) {}
  std::shared_ptr<arrow::Schema> schema() override { return schema_; }
  arrow::Result<flight::FlightPayload> GetSchemaPayload() override { return SchemaPayload(*schema_); }
  arrow::Result<flight::FlightPayload> Next() override {
    if (finished_) return flight::FlightPayload();
    auto batch = run_->Next([this] { return context_->is_cancelled(); });
    if (!batch.ok()) return ToFlight(batch.status());
    if (*batch != nullptr) return BatchPayload(**batch, RangesJson(nullptr, false, false));
    finished_ = true;
    ARROW_ASSIGN_OR_RAISE(auto empty, arrow::RecordBatch::MakeEmpty(schema_));
    return BatchPayload(*empty, RangesJson(nullptr, true, false));
  }

 private:
  std::unique_ptr<query::QueryRun> run_;
  std::shared_ptr<arrow::Schema> schema_;
  const flight::ServerCallContext* context_;  // the DoGet call's, which outlives its stream
  bool finished_ = false;
};

// A streaming query's microbatches and keep-alives, until the client cancels or the server stops.
class MicrobatchStream final : public flight::FlightDataStream {
 public:
  MicrobatchStream(std::unique_ptr<query::QueryStream> stream, const flight::ServerCallContext* context,
                   const std::atomic<bool>* stopping)
      : stream_(std::move(stream)), context_(context), stopping_(stopping) {}
  std::shared_ptr<arrow::Schema> schema() override { return stream_->schema(); }
  arrow::Result<flight::FlightPayload> GetSchemaPayload() override { return SchemaPayload(*stream_->schema()); }
  arrow::Result<flight::FlightPayload> Next() override {
    if (current_) {
      auto batch = current_->run->Next([this] { return context_->is_cancelled() || stopping_->load(); });
      if (batch.ok() && *batch != nullptr) batch = query::Conform(*batch, stream_->schema());
      if (!batch.ok()) return ToFlight(batch.status());
      if (*batch != nullptr) return BatchPayload(**batch, RangesJson(&current_->span, false, current_->reorg));
      ARROW_ASSIGN_OR_RAISE(auto empty, arrow::RecordBatch::MakeEmpty(stream_->schema()));
      auto done = BatchPayload(*empty, RangesJson(&current_->span, true, current_->reorg));
      current_.reset();
      return done;
    }
    auto next = stream_->Next([this] { return context_->is_cancelled() || stopping_->load(); });
    if (!next.ok()) {
      if (next.status().IsCancelled()) return flight::FlightPayload();  // the end
      return ToFlight(next.status());
    }
    if (next->run == nullptr) {  // a keep-alive: the last range again, complete (Amp's watermark)
      ARROW_ASSIGN_OR_RAISE(auto empty, arrow::RecordBatch::MakeEmpty(stream_->schema()));
      const query::BlockSpan* last = next->span.network.empty() ? nullptr : &next->span;
      return BatchPayload(*empty, RangesJson(last, last != nullptr, false));
    }
    current_ = std::move(*next);
    return Next();
  }

 private:
  std::unique_ptr<query::QueryStream> stream_;
  const flight::ServerCallContext* context_;  // the DoGet call's, which outlives its stream
  const std::atomic<bool>* stopping_;
  std::optional<query::Microbatch> current_;
};

// The Handshake: basic credentials answered with a bearer token. Other calls
// are admitted one by one (QueryFlightServer::Service::Admit), not here.
class TokenAuth final : public flight::ServerAuthHandler {
 public:
  explicit TokenAuth(auth::AuthService* auth) : auth_(auth) {}
  Status Authenticate(const flight::ServerCallContext& context, flight::ServerAuthSender*,
                      flight::ServerAuthReader*) override {
    std::string header = Header(context, "authorization");
    if (header.rfind("Basic ", 0) != 0) {
      auto set_up = auth_->IsSetUp();
      if (set_up.ok() && !*set_up) return Status::OK();  // before set-up, anyone
      return flight::MakeFlightError(flight::FlightStatusCode::Unauthenticated,
                                     "send an access key as HTTP basic credentials (username and password)");
    }
    auto decoded = Base64Decode(header.substr(6));
    size_t colon = decoded ? decoded->find(':') : std::string::npos;
    if (colon == std::string::npos) {
      return flight::MakeFlightError(flight::FlightStatusCode::Unauthenticated, "malformed basic credentials");
    }
    auto session = auth_->Login(decoded->substr(0, colon), decoded->substr(colon + 1), kTokenTtl);
    if (!session.ok()) return ToFlight(session.status());
    context.AddHeader("authorization", "Bearer " + session->token);
    return Status::OK();
  }
  Status IsValid(const flight::ServerCallContext&, const std::string&, std::string* peer_identity) override {
    peer_identity->clear();
    return Status::OK();
  }

 private:
  auth::AuthService* auth_;
};

}  // namespace

class QueryFlightServer::Service final : public flight::FlightServerBase {
 public:
  Service(const QueryServices* services, Router* router, size_t max_query_bytes)
      : s_(services), router_(router), max_query_bytes_(max_query_bytes) {}

  Status GetFlightInfo(const flight::ServerCallContext& context, const flight::FlightDescriptor& descriptor,
                       std::unique_ptr<flight::FlightInfo>* info) override {
    return ToFlight(Describe(context, descriptor, info));
  }

  Status DoGet(const flight::ServerCallContext& context, const flight::Ticket& ticket,
               std::unique_ptr<flight::FlightDataStream>* stream) override {
    return ToFlight(Get(context, ticket, stream));
  }

  std::thread serving;

 private:
  // The caller, admitted as the JSON lines row admits a POST of `sql`; who it is in `user`.
  Result<query::ParsedQuery> Admit(const flight::ServerCallContext& context, const std::string& sql,
                                   std::string* user) {
    httplib::Request req;
    req.method = "POST";
    req.path = "/";
    req.body = sql;
    std::string authorization = Header(context, "authorization");
    if (!authorization.empty()) req.set_header("Authorization", authorization);
    ARROW_ASSIGN_OR_RAISE(*user, router_->AdmitOperation(kQueryOperation, req));
    return s_->engine->Parse(sql);
  }

  Status Describe(const flight::ServerCallContext& context, const flight::FlightDescriptor& descriptor,
                  std::unique_ptr<flight::FlightInfo>* info) {
    if (descriptor.type != flight::FlightDescriptor::CMD) {
      return InvalidArgument("UNSUPPORTED_FLIGHT_DESCRIPTOR_TYPE: send a command (a Flight SQL statement query)");
    }
    ARROW_ASSIGN_OR_RAISE(std::string sql, StatementQueryOf(descriptor.cmd, max_query_bytes_));
    std::string user;
    ARROW_ASSIGN_OR_RAISE(auto parsed, Admit(context, sql, &user));
    ARROW_ASSIGN_OR_RAISE(auto header, ParseStreamHeader(Header(context, "amp-stream")));
    TicketContents ticket{sql, header.value_or(parsed.stream), Header(context, "amp-resume"), ""};
    std::shared_ptr<arrow::Schema> schema;
    if (ticket.stream) {
      ARROW_ASSIGN_OR_RAISE(auto stream, OpenStream(parsed, ticket.resume));
      schema = stream->schema();
    } else {
      ARROW_ASSIGN_OR_RAISE(auto run, s_->engine->Run(parsed));
      ARROW_ASSIGN_OR_RAISE(schema, run->Schema());
      ticket.id = handoffs_.Put(user, sql, std::move(run));
    }
    flight::FlightEndpoint endpoint;
    endpoint.ticket.ticket = EncodeTicket(ticket);
    ARROW_ASSIGN_OR_RAISE(auto made, flight::FlightInfo::Make(*schema, descriptor, {endpoint}, -1, -1));
    *info = std::make_unique<flight::FlightInfo>(std::move(made));
    return Status::OK();
  }

  Result<std::unique_ptr<query::QueryStream>> OpenStream(const query::ParsedQuery& parsed, const std::string& resume) {
    std::optional<query::StreamCursor> cursor;
    if (!resume.empty() && !parsed.tables.empty()) {
      ARROW_ASSIGN_OR_RAISE(auto cursors, ParseResume(resume));
      auto it = cursors.find(parsed.tables[0].dataset);
      if (it == cursors.end()) {
        return InvalidArgument(fmt::format("amp-resume has no cursor for network \"{}\", which the query reads",
                                           parsed.tables[0].dataset));
      }
      cursor = it->second;
    }
    return query::QueryStream::Open(s_->engine, s_->tables, s_->watch, parsed, cursor, s_->stream);
  }

  Status Get(const flight::ServerCallContext& context, const flight::Ticket& ticket,
             std::unique_ptr<flight::FlightDataStream>* out) {
    ARROW_ASSIGN_OR_RAISE(auto contents, DecodeTicket(ticket.ticket, max_query_bytes_));
    // The ticket is no capability: its caller is admitted again.
    std::string user;
    ARROW_ASSIGN_OR_RAISE(auto parsed, Admit(context, contents.sql, &user));
    if (contents.stream) {
      ARROW_ASSIGN_OR_RAISE(auto stream, OpenStream(parsed, contents.resume));
      *out = std::make_unique<MicrobatchStream>(std::move(stream), &context, s_->stopping);
      return Status::OK();
    }
    std::unique_ptr<query::QueryRun> run = handoffs_.Take(contents.id, user, contents.sql);
    if (run == nullptr) {
      ARROW_ASSIGN_OR_RAISE(run, s_->engine->Run(parsed));
    }
    ARROW_ASSIGN_OR_RAISE(auto schema, run->Schema());
    *out = std::make_unique<RunStream>(std::move(run), std::move(schema), &context);
    return Status::OK();
  }

  const QueryServices* s_;
  Router* router_;
  const size_t max_query_bytes_;
  Handoffs handoffs_;
};

QueryFlightServer::QueryFlightServer(const QueryServices* services, Router* router, auth::AuthService* auth,
                                     size_t max_query_bytes)
    : service_(std::make_unique<Service>(services, router, max_query_bytes)), auth_(auth) {}

QueryFlightServer::~QueryFlightServer() { Stop(); }

Status QueryFlightServer::Start(const std::string& host, int port) {
  ARROW_ASSIGN_OR_RAISE(auto location, flight::Location::ForGrpcTcp(host, port));
  flight::FlightServerOptions options(location);
  options.auth_handler = std::make_shared<TokenAuth>(auth_);
  Status st = service_->Init(options);
  if (!st.ok())
    return InvalidArgument(fmt::format("cannot listen on {}:{} (Flight SQL): {}", host, port, st.message()));
  started_ = true;
  service_->serving = std::thread([s = service_.get()] { (void)s->Serve(); });
  return Status::OK();
}

void QueryFlightServer::Stop() {
  if (!started_) return;
  started_ = false;
  // Calls still running (a stream, a client that stopped reading) get a few seconds to end.
  auto deadline = std::chrono::system_clock::now() + std::chrono::seconds(3);
  (void)service_->Shutdown(&deadline);
  if (service_->serving.joinable()) service_->serving.join();
}

int QueryFlightServer::port() const { return service_->port(); }

}  // namespace sediment::server
