// A contiguous range of a flat buffer: a layer's parameters, a parameter tensor, a bucket.
#pragma once
#include <cstdint>

namespace hpdl {

struct Range {
  int64_t offset = 0, size = 0;
};

}  // namespace hpdl
