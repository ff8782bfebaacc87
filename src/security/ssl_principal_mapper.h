// Kafka's SslPrincipalMapper: ssl.principal.mapping.rules turns a client certificate's subject
// DN into the principal name ("DEFAULT" keeps the DN; "RULE:pattern/replacement/[LU]" rewrites
// it when the pattern matches the whole DN; the first rule that applies wins).
#pragma once

#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "base/result.h"

namespace tarn::security {

class ssl_principal_mapper {
 public:
  // Parses the rules as Kafka does; an error names the rule it could not read.
  static result<ssl_principal_mapper, std::string> parse(const std::string& rules);

  // The principal name for `dn`, or nullopt when no rule applies (Kafka then fails the
  // authentication: "No rules apply to <dn>").
  std::optional<std::string> name_for(const std::string& dn) const;

 private:
  struct rule {
    bool is_default = false;
    std::regex pattern;
    std::string replacement;
    bool to_lower = false;
    bool to_upper = false;
  };
  std::vector<rule> rules_;
};

}  // namespace tarn::security
