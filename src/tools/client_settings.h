// The client settings every network subcommand takes as Kafka's tools and kcat do: `-X key=value`
// (repeatable) and `--command-config FILE` (Java .properties; -X wins over the file), turned into
// properties for the producer/consumer or into the security settings of the admin clients.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "base/result.h"
#include "client/client_security.h"
#include "client/producer_config.h"

namespace tarn::tools {

struct client_settings {
  std::vector<std::string> settings;  // -X k=v
  std::string command_config;         // --command-config FILE

  // Registers -X and, unless the command names its file option itself, --command-config.
  void add_to(CLI::App* cmd, bool with_command_config = true);
  // The file's properties, then the -X ones (a later duplicate wins).
  result<std::vector<client::property>, std::string> properties() const;
  // The security settings among `properties` (an admin client has no other settings to take; the
  // rest are ignored as Kafka's tools ignore an AdminClient setting they do not use).
  result<client::security_config, std::string> security() const;
};

// Reads a Java .properties file.
result<std::vector<client::property>, std::string> read_properties_file(const std::string& path);

}  // namespace tarn::tools
