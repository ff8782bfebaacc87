// The web console's static files (src/observe/console/), compiled into the binary at build time
// by cmake/embed_assets.cmake: served from memory, no file system access, no CDN.
#pragma once

#include <span>
#include <string_view>

namespace tarn::observe {

struct console_asset {
  std::string_view path;  // the URL path it is served at
  std::string_view content_type;
  std::string_view body;
};

std::span<const console_asset> console_assets();

}  // namespace tarn::observe
