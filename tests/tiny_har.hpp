// The tiny HAR 2x2 model the tests share: input dropout, two residual layers of two
// bidirectional cell groups (hidden 4), last step, output dropout, dense to 4 classes, on
// [6 steps, 3 channels]. The [model] section only; tests add [data] and training sections.
#pragma once

inline constexpr const char* kTinyHarModel = R"(
[model]
input = [6, 3]
classes = 4
[[model.layers]]
type = "dropout"
keep = 0.85
[[model.layers]]
type = "residual_lstm"
repeat = 2
groups = 2
hidden = 4
[[model.layers]]
type = "last_step"
[[model.layers]]
type = "dropout"
keep = 0.85
[[model.layers]]
type = "dense"
units = 4
)";
