# tarn_module(NAME <target> DEPS <targets...>): one library per src/ folder.
# Sources are every *.cc in the folder except *_test.cc; the *_test.cc files beside them form
# one GoogleTest executable, <target>_test. Layering is the DEPS list: a module may only include
# headers of the modules it links.

# What every test executable (a module's <target>_test, each tests/*_test.cc) gets: under
# TARN_UNITY its sources stay separate compiles (test files repeat helper names freely), and it
# compiles at -O0, after the tree's own -O level: the code under test is in the modules and the
# tarn binary, optimized as configured, while the test code only drives it (speed is measured in
# bench/, never in tests), and unoptimized it compiles in about half the time (the test
# executables were 656 of a release tree's 1,226 compile seconds).
# With TARN_TEST_PCH, GoogleTest and the standard headers come precompiled (tarn_test_pch below).
function(tarn_test_target target)
  set_target_properties(${target} PROPERTIES UNITY_BUILD OFF)
  target_compile_options(${target} PRIVATE -O0)
  if(TARN_TEST_PCH)
    # tests/ names its own donor in the ASan tree (tests/CMakeLists.txt): a header precompiled
    # with other sanitizer flags is refused.
    if(NOT TARN_TEST_PCH_DONOR)
      set(TARN_TEST_PCH_DONOR tarn_test_pch)
    endif()
    target_precompile_headers(${target} REUSE_FROM ${TARN_TEST_PCH_DONOR})
  endif()
endfunction()

# The donor of the test executables' precompiled header: compiled with their flags (the tree's,
# then -O0: a header precompiled at another -O level is refused, __OPTIMIZE__ differs), so each
# test reuses one cmake/test_pch.h.gch instead of parsing GoogleTest again. A header that does
# not match a test's flags is not an error: GCC then parses the headers as if there were none.
if(TARN_TEST_PCH)
  add_library(tarn_test_pch OBJECT ${CMAKE_CURRENT_LIST_DIR}/test_pch.cc)
  target_link_libraries(tarn_test_pch PRIVATE GTest::gtest)
  set_target_properties(tarn_test_pch PROPERTIES UNITY_BUILD OFF)
  target_compile_options(tarn_test_pch PRIVATE -O0)
  target_precompile_headers(tarn_test_pch PRIVATE ${CMAKE_CURRENT_LIST_DIR}/test_pch.h)
endif()

function(tarn_module)
  cmake_parse_arguments(M "" "NAME" "DEPS;PRIVATE_DEPS" ${ARGN})
  file(GLOB srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cc)
  file(GLOB tests CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*_test.cc)
  if(tests)
    list(REMOVE_ITEM srcs ${tests})
  endif()
  if(srcs)
    add_library(${M_NAME} STATIC ${srcs})
    target_include_directories(${M_NAME} PUBLIC ${PROJECT_SOURCE_DIR}/src)
    target_link_libraries(${M_NAME} PUBLIC ${M_DEPS} PRIVATE ${M_PRIVATE_DEPS})
  else()
    add_library(${M_NAME} INTERFACE)
    target_include_directories(${M_NAME} INTERFACE ${PROJECT_SOURCE_DIR}/src)
    target_link_libraries(${M_NAME} INTERFACE ${M_DEPS})
  endif()
  if(tests)
    add_executable(${M_NAME}_test ${tests})
    target_link_libraries(${M_NAME}_test PRIVATE ${M_NAME} GTest::gtest_main)
    target_compile_definitions(${M_NAME}_test PRIVATE TARN_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
    tarn_test_target(${M_NAME}_test)
    if(TARN_TSAN)
      # GCC 12 under -fsanitize=thread: false array-bounds errors in inlined vector and memcpy
      # code of the tests (not in the modules, which build clean).
      target_compile_options(${M_NAME}_test PRIVATE -Wno-array-bounds)
    endif()
    gtest_discover_tests(${M_NAME}_test DISCOVERY_TIMEOUT 60 PROPERTIES LABELS unit TIMEOUT 120
                         ${TARN_TEST_ENVIRONMENT})
  endif()
endfunction()
