// QueryEngine::Parse: which tables a query names, by DuckDB's own parser
// (json_serialize_sql), so the tables a query reads are exactly the ones
// authorized and pinned.
#include <fmt/format.h>

#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>

#include "query/duck_internal.h"
#include "query/engine.h"

namespace sediment::query {

// A database that only parses: no files, no extensions from disk.
struct QueryEngine::Parser {
  std::unique_ptr<duck::Database> db;
  std::mutex mu;  // one connection per Parse; opening the database is what is shared
};

std::unique_ptr<QueryEngine::Parser> QueryEngine::MakeParser() {
  auto parser = std::make_unique<Parser>();
  auto db = duck::Database::Open({{"threads", "1"},
                                  {"enable_external_access", "false"},
                                  {"autoinstall_known_extensions", "false"},
                                  {"autoload_known_extensions", "false"}});
  if (db.ok()) parser->db = std::move(*db);
  return parser;
}

namespace {

// Table functions a query may call: they generate rows and read nothing.
const std::set<std::string> kAllowedTableFunctions = {"range", "generate_series", "unnest"};

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The names the query's WITH clauses define, anywhere in it (lower case).
void CollectCtes(const nlohmann::json& node, std::set<std::string>* names) {
  if (node.is_array()) {
    for (const auto& child : node) CollectCtes(child, names);
    return;
  }
  if (!node.is_object()) return;
  auto ctes = node.find("cte_map");
  if (ctes != node.end() && ctes->is_object() && ctes->contains("map") && (*ctes)["map"].is_array()) {
    for (const auto& entry : (*ctes)["map"]) {
      if (entry.is_object() && entry.contains("key") && entry["key"].is_string()) {
        names->insert(Lower(entry["key"].get<std::string>()));  // DuckDB's names are case-insensitive
      }
    }
  }
  for (const auto& [key, child] : node.items()) CollectCtes(child, names);
}

struct Walk {
  std::set<std::string> ctes;
  std::vector<table::TableId> tables;
  Status status;

  void Visit(const nlohmann::json& node) {
    if (!status.ok()) return;
    if (node.is_array()) {
      for (const auto& child : node) Visit(child);
      return;
    }
    if (!node.is_object()) return;
    auto type = node.find("type");
    if (type != node.end() && type->is_string()) {
      if (*type == "BASE_TABLE") return Table(node);
      if (*type == "TABLE_FUNCTION") Function(node);
    }
    for (const auto& [key, child] : node.items()) Visit(child);
  }

  void Table(const nlohmann::json& node) {
    std::string catalog = node.value("catalog_name", "");
    std::string schema = node.value("schema_name", "");
    std::string name = node.value("table_name", "");
    if (!catalog.empty()) {
      status = InvalidArgument(fmt::format("{}.{}.{}: name tables as <dataset>.<table>", catalog, schema, name));
      return;
    }
    if (node.contains("at_clause") && !node["at_clause"].is_null()) {
      status = InvalidArgument(fmt::format("{}.{}: time travel (AT) is not served", schema, name));
      return;
    }
    // Unqualified: a CTE's name; nothing else (DuckDB's own catalog views
    // would show the views' definitions, the server's file paths).
    if (schema.empty()) {
      // Not even as a CTE's name: a CTE in one scope does not hide DuckDB's view in another.
      static const std::regex kSystem(R"(^(duckdb_|sqlite_|pragma_|pg_|information_schema).*)", std::regex::icase);
      if (ctes.count(Lower(name)) == 0 || std::regex_match(name, kSystem)) {
        status = InvalidArgument(fmt::format("table {}: name tables as <dataset>.<table>", name));
      }
      return;
    }
    table::TableId id{schema, name};
    for (const auto& t : tables) {
      if (t == id) return;
    }
    tables.push_back(std::move(id));
  }

  void Function(const nlohmann::json& node) {
    std::string name;
    if (node.contains("function") && node["function"].is_object()) {
      name = node["function"].value("function_name", "");
    }
    if (kAllowedTableFunctions.count(name) == 0) {
      status = InvalidArgument(
          fmt::format("table function {}() is not served: a query reads tables by name, as <dataset>.<table>", name));
    }
  }
};

}  // namespace

// Strips Amp's clause after the statement, `SETTINGS stream = true|false`
// (words in any case), and trailing `;` from `sql`: the clause's value, if it
// has one. The regex runs over the last 64 bytes only: libstdc++'s recurses
// once per character, and a request may be a megabyte of spaces.
std::optional<bool> StripSettings(std::string* sql) {
  size_t end = sql->size();
  while (end > 0 && (std::isspace(static_cast<unsigned char>((*sql)[end - 1])) || (*sql)[end - 1] == ';')) --end;
  sql->resize(end);
  const size_t tail_at = end > 64 ? end - 64 : 0;
  static const std::regex kSettings(R"((^|\s)SETTINGS\s+stream\s*=\s*(true|false)$)", std::regex::icase);
  std::smatch m;
  std::string tail = sql->substr(tail_at);
  if (!std::regex_search(tail, m, kSettings)) return std::nullopt;
  const bool glued = m.position(0) == 0 && m[1].length() == 0 && tail_at > 0 &&
                     !std::isspace(static_cast<unsigned char>((*sql)[tail_at - 1]));
  if (glued) return std::nullopt;  // "xSETTINGS ..." is no clause
  bool value = std::tolower(static_cast<unsigned char>(m[2].str()[0])) == 't';
  sql->resize(tail_at + static_cast<size_t>(m.position(0)));
  while (!sql->empty() && (std::isspace(static_cast<unsigned char>(sql->back())) || sql->back() == ';')) {
    sql->pop_back();
  }
  return value;
}

Result<ParsedQuery> QueryEngine::Parse(std::string_view text) {
  ParsedQuery out;
  std::string sql(text);
  if (auto stream = StripSettings(&sql)) out.stream = *stream;
  if (sql.find_first_not_of(" \t\r\n") == std::string::npos) return InvalidArgument("the query is empty");
  if (parser_->db == nullptr) return Status::IOError("the SQL parser did not start");
  std::string json;
  {
    std::lock_guard<std::mutex> lock(parser_->mu);
    ARROW_ASSIGN_OR_RAISE(auto conn, duck::Connection::Open(*parser_->db));
    ARROW_ASSIGN_OR_RAISE(json, conn->QueryText("SELECT json_serialize_sql(" + duck::Literal(sql) + ")"));
  }
  auto tree = nlohmann::json::parse(json, nullptr, false);
  if (tree.is_discarded()) return Status::IOError("the SQL parser's answer is not JSON");
  if (tree.value("error", false)) {
    std::string message = tree.value("error_message", "the query does not parse");
    if (message.find("Only SELECT") != std::string::npos) {
      return InvalidArgument("only queries (SELECT) are served: the tables are written by their jobs");
    }
    return InvalidArgument(message);
  }
  const auto& statements = tree["statements"];
  if (!statements.is_array() || statements.size() != 1) {
    return InvalidArgument(fmt::format("send one query per request (got {} statements)", statements.size()));
  }
  Walk walk;
  CollectCtes(statements, &walk.ctes);
  walk.Visit(statements);
  ARROW_RETURN_NOT_OK(walk.status);
  for (const auto& id : walk.tables) {
    ARROW_RETURN_NOT_OK(table::ValidateName("dataset", id.dataset));
    ARROW_RETURN_NOT_OK(table::ValidateName("table", id.table));
  }
  out.sql = std::move(sql);
  out.tables = std::move(walk.tables);
  return out;
}

}  // namespace sediment::query
