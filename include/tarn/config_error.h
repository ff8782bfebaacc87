// The error of a configuration the producer or the consumer refused (create()).
#pragma once

#include <string>

namespace tarn::client {

// A property producer::create or consumer::create refused.
struct config_error {
  std::string key;
  std::string value;
  // The whole sentence, naming key and value, e.g. "Invalid value 2 for configuration acks:
  // String must be one of: all, -1, 0, 1" (Java's wording where Java has one).
  std::string message;
};

}  // namespace tarn::client
