// Private to the server's table, scan and jobs APIs (tables/tables_api.cc,
// scan_api.cc, jobs_api.cc, routed here): a route table of {method, pattern, label,
// handler} rows and the one function that registers it.
//
// A handler returns a Status; the route wrapper turns a failure into the
// error reply (errors.h), so handlers only write successful responses.
#pragma once

#include <httplib.h>

#include <string>
#include <variant>
#include <vector>

#include "base/status.h"
#include "server/http/errors.h"
#include "server/http/http_server.h"

namespace sediment::server {

template <typename Service>
struct ApiRoute {
  // Reads the request's body (if any) in one piece.
  using Handler = Status (*)(Service*, const httplib::Request&, httplib::Response&);
  // Reads the request's body as a stream (uploads).
  using UploadHandler = Status (*)(Service*, const httplib::Request&, httplib::Response&,
                                   const httplib::ContentReader&);

  const char* method;
  std::string pattern;  // an httplib regex
  std::string label;    // the route's label in metrics and logs
  std::variant<Handler, UploadHandler> handler;
};

// Serves each route with its handler, which gets `service`; a failed Status
// becomes the error reply (`reply_error`: the protocol's error format).
using ErrorReplier = void (*)(httplib::Response&, const Status&);
template <typename Service>
void RegisterRoutes(HttpServer* http, Service* service, const std::vector<ApiRoute<Service>>& routes,
                    ErrorReplier reply_error = ReplyError) {
  using Route = ApiRoute<Service>;
  for (const Route& route : routes) {
    if (auto* fn = std::get_if<typename Route::Handler>(&route.handler)) {
      http->Handle(route.method, route.pattern, route.label,
                   [service, fn = *fn, reply_error](const httplib::Request& req, httplib::Response& res) {
                     Status st = fn(service, req, res);
                     if (!st.ok()) reply_error(res, st);
                   });
    } else if (auto* fn = std::get_if<typename Route::UploadHandler>(&route.handler)) {
      http->HandleStream(route.method, route.pattern, route.label,
                         [service, fn = *fn, reply_error](const httplib::Request& req, httplib::Response& res,
                                                          const httplib::ContentReader& reader) {
                           Status st = fn(service, req, res, reader);
                           if (!st.ok()) reply_error(res, st);
                         });
    }
  }
}

}  // namespace sediment::server
