// How Kafka's Java tools print things, for the tools that print what Kafka's print: a double as
// Java's Double.toString writes it, and the iteration order of a java.util.HashMap of strings
// (kafka-configs.sh prints quota maps in that order).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tarn::tools {

// Java's Double.toString: "1024.0", "0.001", "1.0E7", "1.5E-4", "NaN", "Infinity" (the shortest
// digits that read back as the same double).
std::string java_double_string(double d);

// String.hashCode of an ASCII (or Latin-1) string.
int32_t java_string_hash(std::string_view s);

// The order in which a java.util.HashMap created with `new HashMap<>(initial_capacity)` (0 for
// the default constructor's 16) iterates keys with these hashCode values, put in this order: the
// indices into `hashes`.
std::vector<size_t> java_hash_map_order(const std::vector<int32_t>& hashes,
                                        size_t initial_capacity);

}  // namespace tarn::tools
