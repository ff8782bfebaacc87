// Text helpers shared by the file formats Kafka reads with Java's readers (server.properties,
// checkpoint files).
#pragma once

#include <string_view>
#include <vector>

namespace tarn {

// Lines as Java's BufferedReader.readLine splits them: on '\n', '\r\n' or '\r'; a final line
// without a terminator counts, an empty tail does not.
inline std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n' || text[i] == '\r') {
      lines.push_back(text.substr(start, i - start));
      if (text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      start = i + 1;
    }
  }
  if (start < text.size()) lines.push_back(text.substr(start));
  return lines;
}

}  // namespace tarn
