// Parsing and validation of the producer's properties. One table lists every key tarn accepts
// with its Java type and range; Java's messages are reused so users of the Java client recognise
// them (checked against kafka-clients 4.4.0 ProducerConfig).
#include "client/producer_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <functional>
#include <limits>
#include <optional>
#include <set>

namespace tarn::client {
namespace {

std::string_view trim(std::string_view s) {
  // Java's String.trim(): strips every char <= ' '.
  while (!s.empty() && static_cast<unsigned char>(s.front()) <= ' ') s.remove_prefix(1);
  while (!s.empty() && static_cast<unsigned char>(s.back()) <= ' ') s.remove_suffix(1);
  return s;
}

config_error invalid(std::string_view key, std::string_view value, std::string_view why) {
  return config_error{std::string(key), std::string(value),
                      fmt::format("Invalid value {} for configuration {}: {}", value, key, why)};
}

// Integer.parseInt / Long.parseLong on the trimmed text: optional sign, decimal digits.
template <typename T>
std::optional<T> parse_integer(std::string_view text) {
  text = trim(text);
  if (!text.empty() && text.front() == '+') {
    text.remove_prefix(1);
    if (!text.empty() && (text.front() == '-' || text.front() == '+')) return std::nullopt;
  }
  T out{};
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return out;
}

using setter = std::function<result<void, config_error>(producer_config&, std::string_view key,
                                                        std::string_view value)>;

// An INT or LONG key with Java's Range validator (inclusive bounds).
template <typename T>
setter integer_key(T producer_config::*field, T min, T max = std::numeric_limits<T>::max()) {
  return [=](producer_config& c, std::string_view key,
             std::string_view value) -> result<void, config_error> {
    auto parsed = parse_integer<T>(value);
    if (!parsed) {
      return fail(invalid(
          key, value, sizeof(T) == 4 ? "Not a number of type INT" : "Not a number of type LONG"));
    }
    if (*parsed < min) {
      return fail(invalid(key, value, fmt::format("Value must be at least {}", min)));
    }
    if (*parsed > max) {
      return fail(invalid(key, value, fmt::format("Value must be no more than {}", max)));
    }
    c.*field = *parsed;
    return {};
  };
}

// A BOOLEAN key: "true" or "false" in any case, after trimming (Java's ConfigDef).
setter boolean_key(bool producer_config::*field) {
  return [=](producer_config& c, std::string_view key,
             std::string_view value) -> result<void, config_error> {
    std::string lower(trim(value));
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    if (lower == "true") {
      c.*field = true;
    } else if (lower == "false") {
      c.*field = false;
    } else {
      return fail(invalid(key, value, "Expected value to be either true or false"));
    }
    return {};
  };
}

// "host:port" or "[ipv6]:port", as Java's ClientUtils.parseAndValidateAddresses accepts them.
std::optional<broker_address> parse_address(std::string_view text) {
  auto colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return std::nullopt;
  std::string_view host = text.substr(0, colon);
  std::string_view port_text = text.substr(colon + 1);
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') return std::nullopt;
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    return std::nullopt;  // an IPv6 literal must be bracketed
  }
  for (char ch : host) {
    bool ok = std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '.' || ch == '_' ||
              ch == '%' || ch == ':';
    if (!ok) return std::nullopt;
  }
  if (port_text.empty() || !std::all_of(port_text.begin(), port_text.end(),
                                        [](char ch) { return ch >= '0' && ch <= '9'; }))
    return std::nullopt;
  auto port = parse_integer<int32_t>(port_text);
  if (!port || *port < 0 || *port > 65535) return std::nullopt;
  return broker_address{std::string(host), static_cast<uint16_t>(*port)};
}

result<void, config_error> set_bootstrap_servers(producer_config& c, std::string_view key,
                                                 std::string_view value) {
  // Java's LIST type: comma separated, each entry trimmed; empty entries are skipped.
  std::vector<broker_address> servers;
  std::string_view rest = trim(value);
  while (!rest.empty()) {
    auto comma = rest.find(',');
    std::string_view entry = trim(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (entry.empty()) continue;
    auto address = parse_address(entry);
    if (!address) {
      return fail(config_error{std::string(key), std::string(value),
                               fmt::format("Invalid url in bootstrap.servers: {}", entry)});
    }
    servers.push_back(std::move(*address));
  }
  if (servers.empty()) {
    return fail(config_error{
        std::string(key), std::string(value),
        "Configuration 'bootstrap.servers' must not be empty. Valid values include: any "
        "non-empty value"});
  }
  c.bootstrap_servers = std::move(servers);
  return {};
}

result<void, config_error> set_acks(producer_config& c, std::string_view key,
                                    std::string_view value) {
  // Java trims STRING values, then ValidString matches exactly (case-sensitive).
  std::string_view v = trim(value);
  if (v == "all" || v == "-1") {
    c.acks = -1;
  } else if (v == "0") {
    c.acks = 0;
  } else if (v == "1") {
    c.acks = 1;
  } else {
    return fail(invalid(key, value, "String must be one of: all, -1, 0, 1"));
  }
  return {};
}

result<void, config_error> set_compression_type(producer_config& c, std::string_view key,
                                                std::string_view value) {
  using record::compression_type;
  static constexpr std::pair<std::string_view, compression_type> names[] = {
      {"none", compression_type::none},
      {"gzip", compression_type::gzip},
      {"snappy", compression_type::snappy},
      {"lz4", compression_type::lz4},
      {"zstd", compression_type::zstd}};
  for (const auto& [name, type] : names) {
    if (trim(value) == name) {
      c.compression_type = type;
      return {};
    }
  }
  return fail(invalid(key, value, "String must be one of: none, gzip, snappy, lz4, zstd"));
}

result<void, config_error> set_gzip_level(producer_config& c, std::string_view key,
                                          std::string_view value) {
  auto parsed = parse_integer<int32_t>(value);
  if (!parsed) return fail(invalid(key, value, "Not a number of type INT"));
  if (*parsed != -1 && (*parsed < 1 || *parsed > 9)) {
    return fail(invalid(key, value, "Value must be between 1 and 9 or equal to -1"));
  }
  c.compression_gzip_level = *parsed;
  return {};
}

result<void, config_error> set_client_id(producer_config& c, std::string_view,
                                         std::string_view value) {
  c.client_id = std::string(trim(value));
  return {};
}

// transactional.id: any string; empty is Java's "not transactional" too (KafkaProducer treats
// an empty id as none only in some versions, so tarn refuses it rather than guess).
result<void, config_error> set_transactional_id(producer_config& c, std::string_view key,
                                                std::string_view value) {
  if (value.empty()) return fail(invalid(key, value, "transactional.id must not be empty"));
  c.transactional_id = std::string(value);
  return {};
}

// Java's security.protocol is accepted so copied configurations work, but only PLAINTEXT.

struct key_entry {
  std::string_view name;
  setter set;
};

const std::vector<key_entry>& supported_keys() {
  using c = producer_config;
  constexpr int32_t i32_max = std::numeric_limits<int32_t>::max();
  static const std::vector<key_entry> keys = {
      {"bootstrap.servers", set_bootstrap_servers},
      {"client.id", set_client_id},
      {"acks", set_acks},
      {"batch.size", integer_key<int32_t>(&c::batch_size, 0)},
      {"linger.ms", integer_key<int64_t>(&c::linger_ms, 0)},
      {"buffer.memory", integer_key<int64_t>(&c::buffer_memory, 0)},
      {"max.block.ms", integer_key<int64_t>(&c::max_block_ms, 0)},
      {"compression.type", set_compression_type},
      {"compression.gzip.level", set_gzip_level},
      {"compression.lz4.level", integer_key<int32_t>(&c::compression_lz4_level, 1, 17)},
      {"compression.zstd.level", integer_key<int32_t>(&c::compression_zstd_level, -131072, 22)},
      {"enable.idempotence", boolean_key(&c::enable_idempotence)},
      {"max.in.flight.requests.per.connection",
       integer_key<int32_t>(&c::max_in_flight_requests_per_connection, 1)},
      {"retries", integer_key<int32_t>(&c::retries, 0, i32_max)},
      {"delivery.timeout.ms", integer_key<int32_t>(&c::delivery_timeout_ms, 0)},
      {"request.timeout.ms", integer_key<int32_t>(&c::request_timeout_ms, 0)},
      {"retry.backoff.ms", integer_key<int64_t>(&c::retry_backoff_ms, 0)},
      {"retry.backoff.max.ms", integer_key<int64_t>(&c::retry_backoff_max_ms, 0)},
      {"max.request.size", integer_key<int32_t>(&c::max_request_size, 0)},
      {"metadata.max.age.ms", integer_key<int64_t>(&c::metadata_max_age_ms, 0)},
      {"reconnect.backoff.ms", integer_key<int64_t>(&c::reconnect_backoff_ms, 0)},
      {"reconnect.backoff.max.ms", integer_key<int64_t>(&c::reconnect_backoff_max_ms, 0)},
      {"socket.connection.setup.timeout.ms",
       integer_key<int64_t>(&c::socket_connection_setup_timeout_ms,
                            std::numeric_limits<int64_t>::min())},
      {"send.buffer.bytes", integer_key<int32_t>(&c::send_buffer_bytes, -1)},
      {"receive.buffer.bytes", integer_key<int32_t>(&c::receive_buffer_bytes, -1)},
      {"partitioner.ignore.keys", boolean_key(&c::partitioner_ignore_keys)},
      {"partitioner.adaptive.partitioning.enable",
       boolean_key(&c::partitioner_adaptive_partitioning_enable)},
      {"partitioner.availability.timeout.ms",
       integer_key<int64_t>(&c::partitioner_availability_timeout_ms, 0)},
      {"transactional.id", set_transactional_id},
      {"transaction.timeout.ms", integer_key<int32_t>(&c::transaction_timeout_ms, 0)},
  };
  return keys;
}

// Keys of Java's ProducerConfig that tarn does not implement: refused with a message saying so
// rather than "unknown", because they are real Kafka settings.
bool is_unsupported_java_key(std::string_view key) {
  static const std::set<std::string_view> keys = {
      "bootstrap.resolve.timeout.ms",
      "buffer.memory.allocation.strategy",
      "client.dns.lookup",
      "client.rack",
      "config.providers",
      "connections.max.idle.ms",
      "enable.metrics.push",
      "interceptor.classes",
      "key.serializer",
      "value.serializer",
      "metadata.max.idle.ms",
      "metadata.cluster.check.enable",
      "metadata.recovery.strategy",
      "metadata.recovery.rebootstrap.trigger.ms",
      "metric.reporters",
      "metrics.num.samples",
      "metrics.recording.level",
      "metrics.sample.window.ms",
      "partitioner.class",
      "partitioner.rack.aware",
      "socket.connection.setup.timeout.max.ms",
      "transaction.two.phase.commit.enable",
      "security.providers",
  };
  return keys.contains(key) || key.starts_with("sasl.") || key.starts_with("ssl.");
}

}  // namespace

std::string_view acks_name(int16_t acks) {
  switch (acks) {
    case 0:
      return "0";
    case 1:
      return "1";
    default:
      return "all";
  }
}

result<producer_config, config_error> parse_producer_config(
    const std::vector<property>& properties) {
  producer_config config;
  std::set<std::string_view> explicitly_set;
  for (const auto& [key, value] : properties) {
    // security.protocol, ssl.*, sasl.*: librdkafka's names (client_security.h).
    if (auto s = config.security.set(key, trim(value))) {
      if (!*s) return fail(config_error{key, value, s->error()});
      continue;
    }
    const auto& keys = supported_keys();
    auto it =
        std::find_if(keys.begin(), keys.end(), [&](const key_entry& e) { return e.name == key; });
    if (it == keys.end()) {
      if (is_unsupported_java_key(key)) {
        return fail(config_error{
            key, value,
            fmt::format("Configuration {} is a Kafka producer setting tarn does not support",
                        key)});
      }
      return fail(config_error{key, value,
                               fmt::format("Unknown configuration {} (value {}): not a producer "
                                           "setting",
                                           key, value)});
    }
    auto set = it->set(config, key, value);
    if (!set) return fail(set.error());
    explicitly_set.insert(it->name);
  }
  if (config.bootstrap_servers.empty()) {
    return fail(config_error{"bootstrap.servers", "",
                             "Missing required configuration \"bootstrap.servers\" which has no "
                             "default value."});
  }

  // Idempotence, in the order ProducerConfig.postProcessAndValidateIdempotenceConfigs checks it.
  const bool idempotence_explicit = explicitly_set.contains("enable.idempotence");
  if (config.enable_idempotence) {
    bool downgrade = false;
    if (config.retries == 0) {
      if (idempotence_explicit) {
        return fail(config_error{"retries", "0",
                                 "Must set retries to non-zero when using the idempotent "
                                 "producer."});
      }
      downgrade = true;
    }
    if (config.acks != -1) {
      if (idempotence_explicit) {
        return fail(config_error{"acks", std::string(acks_name(config.acks)),
                                 "Must set acks to all in order to use the idempotent producer. "
                                 "Otherwise we cannot guarantee idempotence."});
      }
      downgrade = true;
    }
    if (config.max_in_flight_requests_per_connection > 5) {
      auto value = std::to_string(config.max_in_flight_requests_per_connection);
      return fail(config_error{
          "max.in.flight.requests.per.connection", value,
          fmt::format("To use the idempotent producer, max.in.flight.requests.per.connection "
                      "must be set to at most 5. Current value is {}.",
                      value)});
    }
    if (downgrade) config.enable_idempotence = false;
  }
  if (config.transactional_id && !config.enable_idempotence) {
    return fail(config_error{"transactional.id", *config.transactional_id,
                             "Cannot set a transactional.id without also enabling idempotence."});
  }

  // KafkaProducer.configureDeliveryTimeout.
  const int64_t linger_and_request_ms =
      config.linger_ms + static_cast<int64_t>(config.request_timeout_ms);
  if (config.delivery_timeout_ms < linger_and_request_ms) {
    if (explicitly_set.contains("delivery.timeout.ms")) {
      return fail(config_error{
          "delivery.timeout.ms", std::to_string(config.delivery_timeout_ms),
          fmt::format("delivery.timeout.ms should be equal to or larger "
                      "than linger.ms + request.timeout.ms ({} < {} + {})",
                      config.delivery_timeout_ms, config.linger_ms, config.request_timeout_ms)});
    }
    config.delivery_timeout_ms = static_cast<int32_t>(
        std::min<int64_t>(linger_and_request_ms, std::numeric_limits<int32_t>::max()));
  }
  if (auto ok = config.security.validate(); !ok) {
    return fail(config_error{"security.protocol", std::string(to_string(config.security.protocol)),
                             ok.error()});
  }
  return config;
}

result<std::vector<property>, config_error> parse_properties_text(std::string_view text) {
  std::vector<property> out;
  size_t line_number = 0;
  while (!text.empty()) {
    auto newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    text = newline == std::string_view::npos ? std::string_view() : text.substr(newline + 1);
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    line = trim(line);
    if (line.empty() || line.front() == '#' || line.front() == '!') continue;
    if (line.back() == '\\') {
      return fail(config_error{
          "", std::string(line),
          fmt::format("line {}: line continuations are not supported: {}", line_number, line)});
    }
    auto sep = line.find_first_of("=: \t");
    std::string_view key = line.substr(0, sep);
    std::string_view value;
    if (sep != std::string_view::npos) {
      value = trim(line.substr(sep + 1));
      // "key = value" and "key : value": one separator, possibly surrounded by blanks.
      if (!value.empty() && (value.front() == '=' || value.front() == ':') &&
          (line[sep] == ' ' || line[sep] == '\t')) {
        value = trim(value.substr(1));
      }
    }
    out.emplace_back(std::string(key), std::string(value));
  }
  return out;
}

}  // namespace tarn::client
