// Wildcard patterns, as branch-protection rules and policy statements use
// them: '*' matches any run of characters (none included), '?' exactly one,
// anything else itself; the whole text must match.
#pragma once

#include <string_view>

namespace sediment {

bool WildcardMatch(std::string_view pattern, std::string_view text);

}  // namespace sediment
