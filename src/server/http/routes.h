// Private to the APIs whose handlers take their service and the request
// (tables/*_api.cc, iceberg/catalog_api.cc): `Bind` makes such a handler a
// route's handler (route.h), so their tables read as rows.
#pragma once

#include <httplib.h>

#include "server/http/route.h"

namespace sediment::server {

template <typename Service>
RouteHandler Bind(Service* service, Status (*fn)(Service*, const httplib::Request&, httplib::Response&)) {
  return [service, fn](const Call& c) { return fn(service, c.req, c.res); };
}

// A handler that reads its body as a stream (its row is `streamed`).
template <typename Service>
RouteHandler Bind(Service* service,
                  Status (*fn)(Service*, const httplib::Request&, httplib::Response&, const httplib::ContentReader&)) {
  return [service, fn](const Call& c) { return fn(service, c.req, c.res, *c.body); };
}

// The tables, scan and jobs APIs' protocol: JSON errors; open until the
// catalog is set up, then the tables:* and jobs:* permissions.
const Protocol& TablesProtocol();

}  // namespace sediment::server
