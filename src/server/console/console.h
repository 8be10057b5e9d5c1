// The web console (docs/console.md): static pages that call the server's own
// APIs with the caller's session, so it needs no API of its own. A browser's
// GET of / (Accept: text/html, no credentials, no query) gets its page; every
// other request to / stays the S3 gateway's ListBuckets. Its files live under /_console/ — no bucket name
// can start with "_", so the path never shadows a repository.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "server/http/route.h"

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace sediment::server {
class HttpServer;

struct ConsoleFiles {
  std::string dir;       // index.html, *.js, *.css
  std::string chart_js;  // served as /_console/vendor/chart.js
};

// The console's directory: `configured` if set (it must hold index.html), else
// the first of <binary's dir>/console and <binary's dir>/../console that does.
Result<std::string> FindConsoleDir(const std::string& configured);

// The console's row of the route table: GET /_console/{file}, open to anyone
// (the pages ask for an access key before they call the API).
std::vector<Route> ConsoleRoutes(const ConsoleFiles& files);
// The console's page (GET / from a browser).
void ServeConsolePage(const ConsoleFiles& files, const httplib::Request& req, httplib::Response& res);

}  // namespace sediment::server
