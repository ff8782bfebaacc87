// The CPU time this process has used (user + system), for the perf subcommands' reports.
#pragma once

#include <sys/resource.h>

namespace tarn::tools {

inline double process_cpu_seconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  auto secs = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return secs(u.ru_utime) + secs(u.ru_stime);
}

}  // namespace tarn::tools
