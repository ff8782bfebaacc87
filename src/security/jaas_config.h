// Kafka's sasl.jaas.config value: one or more JAAS login module entries,
//   <class> <required|requisite|sufficient|optional> key="value" key=value ... ;
// as Kafka's JaasConfig reads them. PLAIN's users are the user_<name>="<password>" options of
// its PlainLoginModule entry.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace tarn::security {

struct jaas_login_module {
  std::string class_name;
  std::string control_flag;
  std::map<std::string, std::string> options;
};

// The entries, or Kafka's error text for the first thing that does not parse.
result<std::vector<jaas_login_module>, std::string> parse_jaas_config(std::string_view text);

}  // namespace tarn::security
