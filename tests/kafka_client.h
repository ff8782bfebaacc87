// The blocking request client the integration tests use for hand-built requests, under its old
// name (it lived in src/tools; the tools reach the wire only through src/client's library).
#pragma once

#include "client/blocking_client.h"

namespace tarn::tools {

using kafka_client = client::blocking_client;
using client::call;

}  // namespace tarn::tools
