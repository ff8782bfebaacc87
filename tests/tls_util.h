// What the TLS and SASL tests share: throwaway certificates made by the openssl CLI once per test
// program (each test names its own files by its script), and the port a broker bound for a named
// listener.
#pragma once

#include <fstream>
#include <string>

#include "test_util.h"

namespace tarn::test {

// Runs `commands` (openssl invocations, bash) in a fresh directory that holds the files they make.
class test_certificates {
 public:
  explicit test_certificates(const std::string& commands) {
    const std::string script_file = (dir_.path() / "make-certs.sh").string();
    {
      std::ofstream out(script_file);
      out << "set -e; cd " << dir_.path().string() << "\n" << commands;
    }
    auto [rc, out] = run_command("bash " + script_file + " 2>&1");
    ok_ = rc == 0;
    output_ = out;
  }
  bool ok() const { return ok_; }
  const std::string& output() const { return output_; }
  std::string path(const char* name) const { return (dir_.path() / name).string(); }

 private:
  temp_dir dir_;
  bool ok_ = false;
  std::string output_;
};

// The PLAIN users of the secured test brokers (Kafka's PlainLoginModule JAAS line): admin and
// alice.
inline const char* const plain_jaas =
    "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"admin\" "
    "password=\"admin-secret\" user_admin=\"admin-secret\" user_alice=\"alice-secret\";";

// The port a started broker bound for `listener` (from its "listening on" line), 0 if none.
inline uint16_t listener_port(broker_process& broker, const std::string& listener) {
  auto port =
      broker.process().wait_for_number_after("listening on " + listener + "://127.0.0.1:", 10s);
  return port ? static_cast<uint16_t>(std::stoi(*port)) : 0;
}

}  // namespace tarn::test
