// The tiny models the multi-rank tests share, as [model] sections only; tests add [data]
// and training sections.
#pragma once

// conv (4 filters, 3x3) + ReLU + max-pool + dense 16 + tanh + dropout + dense 4, on [1, 8, 8].
inline constexpr const char* kTinyConvModel = R"(
[model]
input = [1, 8, 8]
classes = 4
[[model.layers]]
type = "conv2d"
filters = 4
kernel = 3
pad = 1
[[model.layers]]
type = "relu"
[[model.layers]]
type = "maxpool"
[[model.layers]]
type = "flatten"
[[model.layers]]
type = "dense"
units = 16
[[model.layers]]
type = "tanh"
[[model.layers]]
type = "dropout"
keep = 0.8
[[model.layers]]
type = "dense"
units = 4
)";

// HAR 2x2: input dropout, two residual layers of two bidirectional cell groups (hidden 4),
// last step, output dropout, dense to 4 classes, on [6 steps, 3 channels].
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
