// Member ids as Kafka makes them: "<client id or group.instance.id>-<random UUID>".
#pragma once

#include <string>

namespace tarn::coordinator {

// A random (version 4) UUID in its 8-4-4-4-12 text form.
std::string random_uuid_string();
inline std::string generate_member_id(const std::string& prefix) {
  return prefix + "-" + random_uuid_string();
}

}  // namespace tarn::coordinator
