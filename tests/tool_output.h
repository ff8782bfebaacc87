// A command-line tool run from a test (tarn's subcommands, Kafka's shell tools): its exit status,
// stdout and stderr apart, so tests can compare each stream with what Kafka's tool prints.
#pragma once

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

}  // namespace tarn::test
