#include "base/xml.h"

#include <gtest/gtest.h>

namespace sediment {
namespace {

TEST(XmlTest, EscapedTextReadsBackAsItWas) {
  const std::string text = "a&b<c>\"d\" 'e'";
  const std::string doc = "<R><ETag>" + XmlEscape(text) + "</ETag></R>";
  EXPECT_EQ(doc, "<R><ETag>a&amp;b&lt;c&gt;&quot;d&quot; &apos;e&apos;</ETag></R>");
  EXPECT_EQ(XmlText(doc, "ETag"), text);
  EXPECT_EQ(XmlEscape(std::string("\x01", 1)), "&#x1;");
}

TEST(XmlTest, TheFirstElementIsReadWithCharacterReferences) {
  // MinIO's answer to CompleteMultipartUpload writes the ETag's quotes as &#34;.
  const std::string doc =
      "<CompleteMultipartUploadResult><Key>k</Key><ETag>&#34;abc-2&#34;</ETag><ETag>second</ETag>"
      "</CompleteMultipartUploadResult>";
  EXPECT_EQ(XmlText(doc, "ETag"), "\"abc-2\"");
  EXPECT_EQ(XmlText(doc, "UploadId"), "");
  EXPECT_EQ(XmlText("<a>unclosed", "a"), "");
  EXPECT_EQ(XmlText("<a>&unknown; &#999; &#</a>", "a"), "&unknown; &#999; &#") << "left as written";
}

}  // namespace
}  // namespace sediment
