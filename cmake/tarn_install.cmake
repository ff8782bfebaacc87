# What `cmake --install` and `make package` put on a machine (issue 26; docs/library.md):
# - component `client`: libtarn.so and libtarn.a (the client library: src/client and the modules
#   it stands on, protocol, record and base), the public headers (include/tarn, standard headers
#   only), a CMake package (find_package(tarn) gives tarn::client, and tarn::client_static) and
#   tarn.pc for pkg-config;
# - component `server`: the tarn binary, a systemd unit and /etc/tarn/server.properties (the
#   .deb; a prefix install leaves /etc alone unless this component is asked for).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(tarn_library_modules tarn_client tarn_protocol tarn_record tarn_base)
# A shared library needs position-independent objects; the broker links the same archives into
# a PIE, where the linker relaxes the GOT accesses back to direct ones.
set_target_properties(${tarn_library_modules} PROPERTIES POSITION_INDEPENDENT_CODE ON)

# libtarn.so: every object of the four archives, their own dependencies as DT_NEEDED.
add_library(tarn_shared SHARED ${PROJECT_SOURCE_DIR}/cmake/install/tarn_library.cc)
# (Given as files: CMake's WHOLE_ARCHIVE feature refuses archives that the others also pull in
# as ordinary dependencies.)
set(tarn_whole_archives)
foreach(m ${tarn_library_modules})
  list(APPEND tarn_whole_archives $<TARGET_FILE:${m}>)
endforeach()
target_link_libraries(tarn_shared PRIVATE -Wl,--whole-archive ${tarn_whole_archives}
                      -Wl,--no-whole-archive PkgConfig::ISAL ZLIB::ZLIB Snappy::snappy
                      PkgConfig::LZ4 PkgConfig::ZSTD PkgConfig::RE2 fmt::fmt OpenSSL::SSL OpenSSL::Crypto
                      Threads::Threads)
target_link_options(tarn_shared PRIVATE -Wl,--no-undefined)
add_dependencies(tarn_shared ${tarn_library_modules})
set_target_properties(tarn_shared PROPERTIES OUTPUT_NAME tarn VERSION ${PROJECT_VERSION}
                                             SOVERSION ${PROJECT_VERSION_MAJOR})

# libtarn.a: the four archives merged (ar's MRI script), so a static user links one file.
set(tarn_static ${CMAKE_CURRENT_BINARY_DIR}/libtarn.a)
file(GENERATE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/libtarn.mri CONTENT
"create ${tarn_static}
addlib $<TARGET_FILE:tarn_client>
addlib $<TARGET_FILE:tarn_protocol>
addlib $<TARGET_FILE:tarn_record>
addlib $<TARGET_FILE:tarn_base>
save
end
")
add_custom_command(OUTPUT ${tarn_static}
                   COMMAND ${CMAKE_COMMAND} -E rm -f ${tarn_static}
                   COMMAND sh -c "'${CMAKE_AR}' -M < '${CMAKE_CURRENT_BINARY_DIR}/libtarn.mri'"
                   DEPENDS ${tarn_library_modules}
                   COMMENT "Merging the client library's archives into libtarn.a" VERBATIM)
add_custom_target(tarn_static ALL DEPENDS ${tarn_static})

install(TARGETS tarn_shared LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT client
        NAMELINK_COMPONENT client)
install(FILES ${tarn_static} DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT client)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/tarn DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        COMPONENT client FILES_MATCHING PATTERN "*.h")

set(tarn_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/tarn)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/install/tarnConfig.cmake.in
                              ${CMAKE_CURRENT_BINARY_DIR}/tarnConfig.cmake
                              INSTALL_DESTINATION ${tarn_cmake_dir}
                              PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_LIBDIR)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/tarnConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/tarnConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/tarnConfigVersion.cmake
        DESTINATION ${tarn_cmake_dir} COMPONENT client)
# The .pc finds its prefix from where it lies (${pcfiledir}), so a tree installed with --prefix
# anywhere, or moved, still works.
file(RELATIVE_PATH tarn_pc_to_prefix "/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/")
string(REGEX REPLACE "/$" "" tarn_pc_to_prefix "${tarn_pc_to_prefix}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/install/tarn.pc.in ${CMAKE_CURRENT_BINARY_DIR}/tarn.pc
               @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/tarn.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
        COMPONENT client)

install(TARGETS tarn RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT server)
install(FILES ${PROJECT_SOURCE_DIR}/deploy/debian/tarn.service
        DESTINATION lib/systemd/system COMPONENT server)
install(FILES ${PROJECT_SOURCE_DIR}/deploy/debian/server.properties DESTINATION /etc/tarn
        COMPONENT server)

# `make package` (cpack -G DEB in the build tree): one .deb with both components.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME tarn)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Kafka-compatible streaming broker and C++ client library")
set(CPACK_PACKAGE_CONTACT "tarn developers <tarn@localhost>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/deploy/debian/conffiles ${PROJECT_SOURCE_DIR}/deploy/debian/postinst)
include(CPack)
