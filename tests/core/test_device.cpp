// A device's recordings.
#include <gtest/gtest.h>

#include "hpdl/core/device.hpp"

using namespace hpdl;

// The CPU backends' recording keeps the work: nothing runs when it is recorded, all of it
// on each run (a GPU's, a CUDA graph, is checked in test_cuda_backend.cpp).
TEST(Device, RecordingRunsItsWorkOnEachRunOnly) {
  int calls = 0;
  auto recording = host_device().record([&calls] { ++calls; });
  EXPECT_EQ(calls, 0);
  recording->run();
  recording->run();
  EXPECT_EQ(calls, 2);
}
