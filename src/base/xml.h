// The little XML the S3 protocol needs: text escaped into an element, and an
// element's text read back out of a document Sediment did not write (S3's
// answers, MinIO's). Not a parser: the first <tag>...</tag> is taken as it is.
#pragma once

#include <string>
#include <string_view>

namespace sediment {

// `s` as element text or an attribute value: & < > " ' escaped, and control
// characters XML 1.0 cannot hold as character references.
std::string XmlEscape(std::string_view s);

// The text of the first <tag> element of `doc`, its entities decoded (the
// five predefined ones and character references below 128: MinIO writes an
// ETag's quotes as &#34;); empty if there is none.
std::string XmlText(const std::string& doc, const std::string& tag);

}  // namespace sediment
