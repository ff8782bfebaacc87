// -X and --command-config (client_settings.h): the file first, -X after it (a later duplicate
// wins), security values checked, other keys left to the client that takes them.
#include "tools/client_settings.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace tarn::tools {
namespace {

TEST(client_settings, x_settings_win_over_the_file) {
  const auto file = std::filesystem::temp_directory_path() /
                    ("client_settings_test_" + std::to_string(::getpid()) + ".properties");
  {
    std::ofstream out(file);
    out << "# a Java client's file\nsecurity.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-256\n"
           "sasl.username=alice\nsasl.password=from-file\nssl.truststore.type=PEM\n";
  }
  client_settings s;
  s.command_config = file.string();
  s.settings = {"sasl.password=from-x", "sasl.mechanisms=SCRAM-SHA-512"};
  auto props = s.properties();
  ASSERT_TRUE(props) << props.error();
  ASSERT_EQ(props->size(), 7u);
  EXPECT_EQ(props->back().first, "sasl.mechanisms");
  auto security = s.security();
  std::filesystem::remove(file);
  ASSERT_TRUE(security) << security.error();
  EXPECT_EQ(security->protocol, client::security_protocol::sasl_ssl);
  EXPECT_EQ(security->mechanism, client::sasl_mechanism::scram_sha_512);
  EXPECT_EQ(security->sasl_password, "from-x");  // ssl.truststore.type ignored by the admin
}

TEST(client_settings, refuses_bad_settings) {
  client_settings no_equals;
  no_equals.settings = {"security.protocol"};
  EXPECT_FALSE(no_equals.properties());
  client_settings bad_value;
  bad_value.settings = {"security.protocol=TLS"};
  EXPECT_FALSE(bad_value.security());
  client_settings no_user;
  no_user.settings = {"security.protocol=SASL_PLAINTEXT"};
  EXPECT_FALSE(no_user.security());
  client_settings missing_file;
  missing_file.command_config = "/nonexistent/client.properties";
  EXPECT_FALSE(missing_file.security());
}

}  // namespace
}  // namespace tarn::tools
