// result<T, E>: a value or an error, never an exception. Defined in the public headers
// (include/tarn/result.h) because the client library's API returns it; the broker's modules use
// the same type through this name.
#pragma once

#include "tarn/result.h"
