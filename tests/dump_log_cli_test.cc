// The real `build/tarn dump-log` binary on Kafka-written segments, run as the goldens were made:
// the file copied to 00000000000000000000.log in an empty directory, named relatively, with
// LC_ALL=C.UTF-8. When Java and Maven are present, one case also runs Kafka 4.4.0's own
// DumpLogSegments (scripts/kafka-ref) on the same files and compares stdout and stderr.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace {

namespace fs = std::filesystem;

const fs::path source_dir = TARN_SOURCE_DIR;
const fs::path real_clients = source_dir / "tests/fixtures/real-clients";
const fs::path dump_log_fixtures = source_dir / "tests/fixtures/dump-log";

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << path;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct run_result {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs `command` (a shell command line) in `dir`; stdout and stderr are captured separately.
run_result run_in(const fs::path& dir, const std::string& command) {
  const fs::path err_file = dir / ".stderr";
  const std::string line =
      "cd '" + dir.string() + "' && LC_ALL=C.UTF-8 " + command + " 2>'" + err_file.string() + "'";
  run_result result;
  FILE* pipe = popen(line.c_str(), "r");
  if (pipe == nullptr) {
    ADD_FAILURE() << "popen failed";
    return result;
  }
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) result.out.append(buffer, n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.err = read_text(err_file);
  fs::remove(err_file);
  return result;
}

class temp_dir {
 public:
  temp_dir() {
    std::string pattern = (fs::temp_directory_path() / "tarn-dump-log-XXXXXX").string();
    path_ = mkdtemp(pattern.data());
  }
  ~temp_dir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::string tarn(const std::string& args) { return std::string(TARN_BINARY) + " dump-log " + args; }

TEST(dump_log_cli, prints_kafkas_output_for_a_real_client_segment) {
  temp_dir dir;
  fs::copy_file(real_clients / "python-zstd.log", dir.path() / "00000000000000000000.log");
  const struct {
    const char* args;
    const char* golden;
  } cases[] = {
      {"--files 00000000000000000000.log --deep-iteration --print-data-log",
       "python-zstd.dump.txt"},
      {"--deep-iteration --files 00000000000000000000.log", "python-zstd.dump-deep.txt"},
      {"--files 00000000000000000000.log", "python-zstd.dump-shallow.txt"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.args);
    const auto got = run_in(dir.path(), tarn(c.args));
    EXPECT_EQ(got.out, read_text(real_clients / c.golden));
    EXPECT_EQ(got.exit_code, 0);
    EXPECT_EQ(got.err, "");
  }
}

TEST(dump_log_cli, truncated_segment_prints_whole_batches_and_exits_non_zero) {
  temp_dir dir;
  fs::copy_file(real_clients / "java-none-truncated.log", dir.path() / "00000000000000000000.log");
  const auto got = run_in(dir.path(), tarn("--deep-iteration --print-data-log --files "
                                           "00000000000000000000.log"));
  EXPECT_EQ(got.out, read_text(real_clients / "java-none-truncated.dump.txt"));
  EXPECT_EQ(got.exit_code, 1);  // Kafka: 0 (docs/compatibility.md)
  EXPECT_EQ(got.err,
            "tarn dump-log: 00000000000000000000.log: 1621 invalid bytes start at byte position "
            "829\n");
}

TEST(dump_log_cli, corrupt_gzip_batch_fails_after_its_batch_line) {
  temp_dir dir;
  fs::copy_file(real_clients / "java-gzip-badcrc.log", dir.path() / "00000000000000000000.log");
  const auto got = run_in(dir.path(), tarn("--deep-iteration --files 00000000000000000000.log"));
  EXPECT_EQ(got.out, read_text(real_clients / "java-gzip-badcrc.dump-deep.txt"));
  EXPECT_EQ(got.exit_code, 1);
  EXPECT_NE(got.err.find("batch at byte position 182 cannot be read"), std::string::npos)
      << got.err;
}

const char* const features_files =
    "00000000000000000100.log,00000000000000000100.index,00000000000000000100.timeindex,"
    "00000000000000000100.txnindex";

void copy_features(const fs::path& to) {
  for (const char* suffix : {".log", ".index", ".timeindex", ".txnindex"}) {
    fs::copy_file(dump_log_fixtures / (std::string("00000000000000000100") + suffix),
                  to / (std::string("00000000000000000100") + suffix));
  }
}

std::string features_stderr(const fs::path& dir) {
  const std::string abs = fs::absolute(dir).string();
  return "Found out of order timestamp in :" + abs +
         "/00000000000000000100.timeindex\n"
         "  Index timestamp: 1767225600300, Previously indexed timestamp: 1767225609999\n"
         "Non-consecutive offsets in " +
         abs +
         "/00000000000000000100.log\n"
         "  -1 is followed by 100\n";
}

TEST(dump_log_cli, segment_and_its_indexes_with_kafkas_stderr_summaries) {
  temp_dir dir;
  copy_features(dir.path());
  const auto got =
      run_in(dir.path(), tarn(std::string("--deep-iteration --print-data-log --files ") +
                              features_files + ",unknown.txt"));
  EXPECT_EQ(got.out, read_text(dump_log_fixtures / "features.all.txt") + "Dumping unknown.txt\n");
  EXPECT_EQ(got.exit_code, 0);
  EXPECT_EQ(got.err, "Ignoring unknown file unknown.txt\n" + features_stderr(dir.path()));
}

TEST(dump_log_cli, bad_arguments) {
  temp_dir dir;
  auto got = run_in(dir.path(), tarn(""));
  EXPECT_NE(got.exit_code, 0);
  EXPECT_NE(got.err.find("--files"), std::string::npos) << got.err;
  got = run_in(dir.path(), tarn("--files missing.log"));
  EXPECT_EQ(got.exit_code, 1);
  EXPECT_EQ(got.out, "Dumping missing.log\n");
  EXPECT_NE(got.err.find("cannot open missing.log"), std::string::npos) << got.err;
}

bool have_reference_tools() {
  return std::system("command -v java >/dev/null 2>&1 && command -v mvn >/dev/null 2>&1") == 0;
}

// Kafka's DumpLogSegments itself, on the same files (one JVM start, a few seconds).
TEST(dump_log_cli, live_comparison_with_kafkas_dump_log_segments) {
  if (!have_reference_tools()) GTEST_SKIP() << "java or mvn missing: no reference Kafka";
  temp_dir dir;
  copy_features(dir.path());
  fs::copy_file(real_clients / "kcat-snappy.log", dir.path() / "00000000000000000000.log");
  const std::string args = std::string("--deep-iteration --print-data-log --files ") +
                           features_files + ",00000000000000000000.log";
  const auto kafka =
      run_in(dir.path(), (source_dir / "scripts/kafka-ref").string() + " tool dump-log " + args);
  if (kafka.exit_code != 0 && kafka.out.empty()) {
    GTEST_SKIP() << "reference Kafka did not run: " << kafka.err.substr(0, 500);
  }
  const auto ours = run_in(dir.path(), tarn(args));
  EXPECT_EQ(ours.out, kafka.out);
  EXPECT_EQ(ours.err, kafka.err);
  EXPECT_EQ(ours.exit_code, kafka.exit_code);
}

}  // namespace
