#include "base/xml.h"

#include <fmt/format.h>

namespace sediment {

std::string XmlEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') {
          out += fmt::format("&#x{:X};", static_cast<unsigned>(static_cast<unsigned char>(c)));
        } else {
          out.push_back(c);
        }
    }
  }
  return out;
}

std::string XmlText(const std::string& doc, const std::string& tag) {
  const std::string open = "<" + tag + ">", close = "</" + tag + ">";
  const auto a = doc.find(open);
  if (a == std::string::npos) return "";
  const auto b = doc.find(close, a + open.size());
  if (b == std::string::npos) return "";
  std::string raw = doc.substr(a + open.size(), b - a - open.size()), out;
  // The five predefined entities and decimal character references (MinIO
  // writes the quotes of an ETag as &#34;).
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] != '&') {
      out += raw[i];
      continue;
    }
    const auto semi = raw.find(';', i);
    if (semi == std::string::npos) {
      out += raw.substr(i);
      break;
    }
    const std::string name = raw.substr(i + 1, semi - i - 1);
    if (name == "quot")
      out += '"';
    else if (name == "amp")
      out += '&';
    else if (name == "lt")
      out += '<';
    else if (name == "gt")
      out += '>';
    else if (name == "apos")
      out += '\'';
    else if (name.size() > 1 && name[0] == '#' && name.find_first_not_of("0123456789", 1) == std::string::npos &&
             name.size() < 5 && std::stoi(name.substr(1)) < 128)
      out += static_cast<char>(std::stoi(name.substr(1)));
    else
      out += "&" + name + ";";
    i = semi;
  }
  return out;
}

}  // namespace sediment
