// Java's Double.toString and HashMap iteration order (see java_format.h).
#include "tools/java_format.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <numeric>

namespace tarn::tools {

std::string java_double_string(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  // The shortest round-trip digits, from "d.ddde+XX".
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), std::fabs(d), std::chars_format::scientific);
  std::string_view s(buf, static_cast<size_t>(r.ptr - buf));
  size_t e = s.find('e');
  std::string digits;
  for (char c : s.substr(0, e)) {
    if (c >= '0' && c <= '9') digits += c;
  }
  int exponent = std::atoi(std::string(s.substr(e + 1)).c_str());
  std::string out = d < 0 ? "-" : "";
  const double a = std::fabs(d);
  if (a >= 1e-3 && a < 1e7) {
    const int point = exponent + 1;  // digits before the decimal point
    if (point <= 0) {
      out += "0." + std::string(static_cast<size_t>(-point), '0') + digits;
    } else if (static_cast<size_t>(point) >= digits.size()) {
      out += digits + std::string(static_cast<size_t>(point) - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, static_cast<size_t>(point)) + "." +
             digits.substr(static_cast<size_t>(point));
    }
  } else {
    out += digits[0];
    out += '.';
    out += digits.size() > 1 ? digits.substr(1) : "0";
    out += "E" + std::to_string(exponent);
  }
  return out;
}

int32_t java_string_hash(std::string_view s) {
  uint32_t h = 0;
  for (unsigned char c : s) h = 31 * h + c;
  return static_cast<int32_t>(h);
}

std::vector<size_t> java_hash_map_order(const std::vector<int32_t>& hashes,
                                        size_t initial_capacity) {
  // HashMap's table: tableSizeFor(initial capacity) (16 by default), doubled while the size
  // exceeds (int)(capacity * 0.75). Iteration walks the buckets in index order, each in insertion
  // order (resizing splits a bucket's list keeping its order).
  size_t capacity = 16;
  if (initial_capacity > 0) {
    capacity = 1;
    while (capacity < initial_capacity) capacity <<= 1;
  }
  while (hashes.size() > static_cast<size_t>(static_cast<double>(capacity) * 0.75)) capacity <<= 1;
  auto bucket = [&](size_t i) {
    const uint32_t h = static_cast<uint32_t>(hashes[i]);
    return (h ^ (h >> 16)) & (capacity - 1);
  };
  std::vector<size_t> order(hashes.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return bucket(a) < bucket(b); });
  return order;
}

}  // namespace tarn::tools
