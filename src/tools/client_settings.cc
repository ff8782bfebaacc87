// -X and --command-config for the network subcommands (client_settings.h).
#include "tools/client_settings.h"

#include <fstream>
#include <sstream>

namespace tarn::tools {

void client_settings::add_to(CLI::App* cmd, bool with_command_config) {
  cmd->add_option("-X", settings,
                  "Client setting key=value, librdkafka's names (security.protocol, ssl.*, "
                  "sasl.*); repeatable");
  if (with_command_config) {
    cmd->add_option("--command-config", command_config,
                    "A Java .properties file of client settings (security.protocol, ssl.*, "
                    "sasl.*)");
  }
}

result<std::vector<client::property>, std::string> read_properties_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return fail("Cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  auto parsed = client::parse_properties_text(text.str());
  if (!parsed) return fail(path + ": " + parsed.error().message);
  return std::move(*parsed);
}

result<std::vector<client::property>, std::string> client_settings::properties() const {
  std::vector<client::property> out;
  if (!command_config.empty()) {
    auto file = read_properties_file(command_config);
    if (!file) return fail(file.error());
    out = std::move(*file);
  }
  for (const auto& s : settings) {
    const auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0) return fail("Invalid -X " + s + ": expected key=value");
    out.emplace_back(s.substr(0, eq), s.substr(eq + 1));
  }
  return out;
}

result<client::security_config, std::string> client_settings::security() const {
  auto props = properties();
  if (!props) return fail(props.error());
  client::security_config config;
  for (const auto& [key, value] : *props) {
    if (auto set = config.set(key, value); set && !*set) return fail(set->error());
  }
  if (auto ok = config.validate(); !ok) return fail(ok.error());
  return config;
}

}  // namespace tarn::tools
