// /v1/status: what an operator asks first (is it up, what does it listen on, how full is the
// disk, how many topics), as one JSON object. The fields are listed in docs/http-api.md.
#pragma once

#include <string>
#include <string_view>

#include "broker/broker_snapshot.h"

namespace tarn::observe {

std::string status_json(const broker::broker_snapshot& snapshot);

// `s` as a JSON string literal (quotes included): ", \ and control characters escaped.
std::string json_string(std::string_view s);

}  // namespace tarn::observe
