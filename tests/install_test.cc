// The installed client library (issue 26 item 5): `cmake --install` of this build tree's client
// component into a fresh prefix, then examples/ built as an outside project against it, with
// CMake's find_package(tarn) (shared and static) and with pkg-config, and each produce program
// run against a real broker; the records it reports are read back by the consume program of the
// same build, and by kcat. The public headers must compile on their own with nothing but the
// installed include directory.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <string>

#include "test_util.h"

namespace tarn::test {
namespace {

const std::string build_dir = std::filesystem::path(TARN_BINARY).parent_path().string();
const std::string source_dir = TARN_SOURCE_DIR;

class install : public ::testing::Test {
 protected:
  void SetUp() override {
#ifdef TARN_SANITIZED_BUILD
    // The sanitizer trees do not configure the install rules (an outside program would have to
    // link the sanitizers' runtimes); the release tree checks the packaging.
    GTEST_SKIP() << "the install rules exist in the release tree only";
#endif
    if (!have_program("kcat")) GTEST_SKIP() << "kcat is missing";
    prefix_ = (tmp_.path() / "prefix").string();
    auto [rc, out] = run_command("cmake --install '" + build_dir + "' --prefix '" + prefix_ +
                                 "' --component client 2>&1");
    ASSERT_EQ(rc, 0) << out;
  }

  // Runs one build of the examples against the broker: `program` must deliver 3 records, which
  // `reader` (the consume example) and kcat then read back at the offsets it printed.
  void produce_and_read_back(const std::string& program, const std::string& reader,
                             const std::string& topic) {
    auto [rc, out] =
        run_command("timeout 60 '" + program + "' " + bootstrap() + " " + topic + " 3 2>&1");
    ASSERT_EQ(rc, 0) << out;
    EXPECT_NE(out.find("done 3"), std::string::npos) << out;
    std::string expected;
    std::smatch m;
    std::string rest = out;
    const std::regex delivered("delivered 0 ([0-9]+) (record-[0-9])");
    while (std::regex_search(rest, m, delivered)) {
      expected += m[1].str() + " " + m[2].str() + "\n";
      rest = m.suffix();
    }
    EXPECT_EQ(expected, "0 record-0\n1 record-1\n2 record-2\n") << out;
    auto [krc, read] = run_command("timeout 30 kcat -C -b " + bootstrap() + " -t " + topic +
                                   " -e -q -f '%o %s\\n' 2>&1");
    EXPECT_EQ(krc, 0) << read;
    EXPECT_EQ(read, expected);
    auto [crc, consumed] =
        run_command("timeout 60 '" + reader + "' " + bootstrap() + " " + topic + " 3 2>&1");
    EXPECT_EQ(crc, 0) << consumed;
    EXPECT_EQ(consumed, "consumed " +
                            std::regex_replace(expected, std::regex("\n(.)"), "\nconsumed $1") +
                            "done 3\n");
  }

  std::string bootstrap() const { return "127.0.0.1:" + std::to_string(broker_.port()); }

  temp_dir tmp_;
  std::string prefix_;
  broker_process broker_;
};

TEST_F(install, public_headers_compile_alone) {
  for (const char* header : {"tarn/producer.h", "tarn/producer_record.h", "tarn/consumer.h",
                             "tarn/consumer_record_view.h", "tarn/topic_partition.h",
                             "tarn/config_error.h", "tarn/result.h", "tarn/share_consumer.h"}) {
    auto [rc, out] = run_command("printf '#include <" + std::string(header) +
                                 ">\\n' | g++ -std=c++20 -fsyntax-only -Wall -Wextra -Werror -I'" +
                                 prefix_ + "/include' -x c++ - 2>&1");
    EXPECT_EQ(rc, 0) << header << ":\n" << out;
  }
}

TEST_F(install, cmake_package_builds_the_examples_shared_and_static) {
  ASSERT_NE(broker_.port(), 0) << broker_.output();
  const std::string examples = (tmp_.path() / "examples").string();
  auto [rc, out] = run_command("cmake -S '" + source_dir + "/examples' -B '" + examples +
                               "' -G Ninja -DCMAKE_PREFIX_PATH='" + prefix_ + "' 2>&1 && " +
                               "cmake --build '" + examples + "' 2>&1");
  ASSERT_EQ(rc, 0) << out;
  produce_and_read_back(examples + "/produce", examples + "/consume", "installed-shared");
  produce_and_read_back(examples + "/produce_static", examples + "/consume_static",
                        "installed-static");
}

TEST_F(install, pkg_config_builds_the_example) {
  ASSERT_NE(broker_.port(), 0) << broker_.output();
  if (!have_program("pkg-config")) GTEST_SKIP() << "pkg-config is missing";
  auto build = [&](const std::string& example) {
    const std::string program = (tmp_.path() / (example + "_pc")).string();
    auto [rc, out] = run_command("PKG_CONFIG_PATH='" + prefix_ + "/lib/pkgconfig' sh -c 'g++ " +
                                 "-std=c++20 \"" + source_dir + "/examples/" + example + ".cc\" " +
                                 "$(pkg-config --cflags --libs tarn) -Wl,-rpath," + prefix_ +
                                 "/lib -o \"" + program + "\"' 2>&1");
    EXPECT_EQ(rc, 0) << out;
    return program;
  };
  const std::string producer = build("produce");
  const std::string consumer = build("consume");
  ASSERT_FALSE(HasFailure());
  produce_and_read_back(producer, consumer, "installed-pkg-config");
}

}  // namespace
}  // namespace tarn::test
