// Shapes of the flat tensors that flow between layers. Data lives in buffers owned by the
// model; a Shape only says how to read them. The first dimension is always the batch.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace hpdl {

struct Shape {
  std::vector<int64_t> dims;

  int64_t rank() const { return static_cast<int64_t>(dims.size()); }
  int64_t operator[](size_t i) const { return dims[i]; }
  // Number of elements (product of all dims).
  int64_t numel() const;
  // Elements per sample (product of all dims but the first).
  int64_t per_sample() const;
  std::string str() const;  // "[64, 1, 28, 28]"
  bool operator==(const Shape& o) const { return dims == o.dims; }
};

}  // namespace hpdl
