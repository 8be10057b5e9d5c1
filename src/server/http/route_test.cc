// The route table's templates: paths compiled to the regex their rows match,
// and permission resources filled from a request (route.h).
#include "server/http/route.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <regex>

namespace sediment::server {
namespace {

httplib::Request Matched(const CompiledPath& path, const std::string& target) {
  httplib::Request req;
  req.path = target;
  EXPECT_TRUE(std::regex_match(req.path, req.matches, std::regex(path.regex))) << path.regex << " " << target;
  return req;
}

TEST(RouteTest, APathTemplateMatchesOneSegmentPerParameterAndLiteralTextExactly) {
  auto path = CompilePath("/api/v1/repositories/{repository}/branches/{branch}");
  ASSERT_TRUE(path.ok());
  EXPECT_EQ(path->params, (std::vector<std::string>{"repository", "branch"}));
  auto req = Matched(*path, "/api/v1/repositories/r1/branches/b.x");
  EXPECT_EQ(req.matches[1].str(), "r1");
  EXPECT_EQ(req.matches[2].str(), "b.x");
  std::smatch m;
  std::string nested = "/api/v1/repositories/r1/branches/b/x";
  EXPECT_FALSE(std::regex_match(nested, m, std::regex(path->regex))) << "a parameter is one segment";
  auto dots = CompilePath("/a.b/{x}");
  ASSERT_TRUE(dots.ok());
  std::string other = "/aXb/1";
  EXPECT_FALSE(std::regex_match(other, m, std::regex(dots->regex))) << "'.' in a template is literal";
}

TEST(RouteTest, AParameterMayNameItsOwnPattern) {
  auto path = CompilePath("/r/{repository:[^/]*}/x/{file:.+}");
  ASSERT_TRUE(path.ok());
  auto req = Matched(*path, "/r//x/a/b.js");
  EXPECT_EQ(req.matches[1].str(), "");
  EXPECT_EQ(req.matches[2].str(), "a/b.js");
}

TEST(RouteTest, AMalformedTemplateIsRefusedNamingIt) {
  for (const char* bad : {"/a/{x", "/a/x}", "/a/{}/b", "/a/{:.*}"}) {
    auto path = CompilePath(bad);
    ASSERT_FALSE(path.ok()) << bad;
    EXPECT_NE(path.status().message().find(bad), std::string::npos) << path.status().message();
  }
}

TEST(RouteTest, AResourceIsFilledFromThePathTheQueryAndTheBody) {
  auto path = CompilePath("/repositories/{repository}/branches/{branch}");
  ASSERT_TRUE(path.ok());
  auto req = Matched(*path, "/repositories/lake/branches/dev");
  req.params.emplace("path", "a/b.txt");
  req.body = R"({"name": "feature", "id": 7})";
  EXPECT_EQ(ExpandResource("arn:lakefs:fs:::repository/{repository}/branch/{branch}", *path, req),
            "arn:lakefs:fs:::repository/lake/branch/dev");
  EXPECT_EQ(ExpandResource("arn:x:::{repository}/object/{?path}", *path, req), "arn:x:::lake/object/a/b.txt");
  EXPECT_EQ(ExpandResource("arn:x:::{repository}/branch/{body.name}", *path, req), "arn:x:::lake/branch/feature");
  // Absent or not a string: empty, so the policy decides on the resource without it.
  EXPECT_EQ(ExpandResource("arn:x:::{body.id}/{?none}/{body.missing}", *path, req), "arn:x::://");
  req.body = "not json";
  EXPECT_EQ(ExpandResource("arn:x:::{body.name}", *path, req), "arn:x:::");
  EXPECT_EQ(ExpandResource("*", *path, req), "*");
}

TEST(RouteTest, ARowThatWouldAuthorizeLessThanItSaysIsRefusedAtStart) {
  static const Protocol kTest{"test", nullptr};
  RouteHandler ok = [](const Call&) { return Status::OK(); };
  struct Row {
    Route route;
    const char* says;
  };
  std::vector<Row> rows = {
      {{"GET", "/a/{x}", "test A", Access::kAuthorized, {}, ok, &kTest}, "needs no permission"},
      {{"GET", "/a/{x}", "test B", Access::kPublic, Need("t:Read", "*"), ok, &kTest}, "never check"},
      {{"GET", "/a/{x}", "test C", Access::kAuthorized, Need("t:Read", "arn:{y}"), ok, &kTest}, "no parameter"},
      {{"PUT", "/a/{x}", "test D", Access::kAuthorized, Need("t:Write", "arn:{body.id}"), ok, &kTest, true},
       "streamed body"},
      {{"GET", "/a/{x}", "test E", Access::kAuthorized, Need("", "arn:{x}"), ok, &kTest}, "without an action"},
      {{"GET", "/a/{x}", "test F", Access::kPublic, {}, nullptr, &kTest}, "no protocol or handler"},
      {{"GET", "/a/{x}", "test H", Access::kAuthorized, Need("t:Read", "arn:{@repo}"), ok, &kTest}, "derives nothing"},
  };
  for (auto& row : rows) {
    Router router(nullptr);
    router.Add({row.route});
    Status st = router.Register(nullptr);  // refused before anything is registered
    ASSERT_FALSE(st.ok()) << row.says;
    EXPECT_NE(st.message().find(row.says), std::string::npos) << st.message();
  }
  Router fine(nullptr);
  fine.Add(
      {Route{"GET", "/a/{x}", "test G", Access::kAuthorized, Need("t:Read", "arn:{x}/{?q}/{body.f}"), ok, &kTest}});
  EXPECT_TRUE(fine.routes().size() == 1);
}

TEST(RouteTest, DerivedPartsExpandToEveryValueAndNoValueAuthorizesNothing) {
  Derived derived = {{"repo", {"lake"}}, {"table", {"a/t1", "b/t2"}}, {"none", {}}};
  auto one = ExpandDerived("arn:x:::{@repo}/{@table}", derived);
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_EQ(*one, (std::vector<std::string>{"arn:x:::lake/a/t1", "arn:x:::lake/b/t2"}));
  EXPECT_EQ(*ExpandDerived("arn:x:::plain", derived), std::vector<std::string>{"arn:x:::plain"});
  EXPECT_TRUE(IsInvalidArgument(ExpandDerived("arn:x:::{@none}", derived).status()));
  EXPECT_TRUE(IsInvalidArgument(ExpandDerived("arn:x:::{@missing}", derived).status()));
}

}  // namespace
}  // namespace sediment::server
