// The first place where two TOML texts differ under one key, as a user reads it: a checkpoint
// names what of its model differs from this run's ("model.layers.2.type: it has \"relu\",
// this run \"tanh\"") instead of only that its tensors differ.
#pragma once
#include <string>

namespace hpdl {

// Compares the table `key` (e.g. "model") of two configs as TOML text, keys in name order,
// arrays entry by entry. Returns "" when they are equal, else one line naming the first
// difference. Throws Error when a text cannot be parsed.
std::string first_difference(const std::string& was_toml, const std::string& now_toml,
                             const std::string& key);

}  // namespace hpdl
