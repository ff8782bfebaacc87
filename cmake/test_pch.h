// The headers every test executable parses, precompiled once a tree (cmake/tarn_module.cmake,
// tarn_test_pch): GoogleTest alone is three quarters of a test file's preprocessed lines. Only
// GoogleTest and standard headers, so that a change to tarn's own headers never rebuilds it;
// each test still includes what it uses (the build without TARN_TEST_PCH checks that).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>
