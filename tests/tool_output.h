// A command-line tool run from a test (tarn's subcommands, Kafka's shell tools): its exit status,
// stdout and stderr apart, so tests can compare each stream with what Kafka's tool prints.
#pragma once

#include <sstream>
#include <string>

#include "test_util.h"

namespace tarn::test {

struct split_output {
  int code = -1;
  std::string out, err;
};

inline split_output run_split(const std::string& command) {
  temp_dir dir;
  const auto out = dir.path() / "out", err = dir.path() / "err";
  // run_command adds 2>&1 after the command: the braces keep it off the command's own streams.
  const int code =
      run_command("{ " + command + " >" + out.string() + " 2>" + err.string() + "; }").first;
  return {code, read_file(out), read_file(err)};
}

// A Java tool's stderr without exception stack traces (the "\tat" lines, their causes and the
// exception class lines), which differ between Kafka's own brokers and tarn only in the server
// side's classes: what is left is the tool's message to the user.
inline std::string without_traces(const std::string& err) {
  std::istringstream in(err);
  std::string line, out;
  while (std::getline(in, line)) {
    if (line.starts_with("\tat ") || line.starts_with("java.util.concurrent.") ||
        line.starts_with("org.apache.kafka.common.errors.") || line.starts_with("Caused by") ||
        line.starts_with("\t... ")) {
      continue;
    }
    out += line + "\n";
  }
  return out;
}

}  // namespace tarn::test
