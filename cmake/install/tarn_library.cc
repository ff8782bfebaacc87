// The shared library's own source: libtarn.so is the client's archives linked whole
// (cmake/tarn_install.cmake), and CMake wants a source file for a library target.
namespace tarn {
extern const char library_name[] = "tarn";
}  // namespace tarn
