// Java .properties parsing, as java.util.Properties.load reads a file: comments, `key=value`,
// `key: value` and `key value`, backslash escapes and continuation lines. Kafka's server.properties
// is such a file, so tarn reads it with the same rules.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"

namespace tarn::broker {

// Key/value pairs in file order; a key given twice keeps both entries (the later one wins when
// the pairs are applied, as in Java).
using properties = std::vector<std::pair<std::string, std::string>>;

// Parses the text of a .properties file. The only error is a malformed \uXXXX escape; the
// message names the line.
result<properties, std::string> parse_properties(std::string_view text);

// Reads and parses a file; errors name the path.
result<properties, std::string> load_properties_file(const std::string& path);

}  // namespace tarn::broker
