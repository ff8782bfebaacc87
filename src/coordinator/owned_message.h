// A generated protocol message together with the strings and bytes its views point into. The
// coordinator answers with these: the message can be encoded after the coordinator's lock is
// released, since nothing in it borrows coordinator state that another thread may change.
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tarn::coordinator {

// Stable storage for the views of a message (a deque never moves what it holds).
class message_arena {
 public:
  std::string_view keep(std::string_view s) { return strings_.emplace_back(s); }
  std::span<const uint8_t> keep(std::span<const uint8_t> b) {
    auto& v = bytes_.emplace_back(b.begin(), b.end());
    return {v.data(), v.size()};
  }

 private:
  std::deque<std::string> strings_;
  std::deque<std::vector<uint8_t>> bytes_;
};

template <class Message>
struct owned_message {
  Message message;
  message_arena arena;
};

}  // namespace tarn::coordinator
