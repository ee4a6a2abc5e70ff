// Settings that pick one behaviour among a few (settings.hpp): an enum each, and the words a
// config file uses for its values (ChoiceWords<E>::words, in the enum's order). The config
// reader parses the word once (TableReader::get_choice); past it, code compares enums, and
// word() names a value in messages, manifests and plans. Plain data, like settings.hpp.
#pragma once
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hpdl/core/error.hpp"

namespace hpdl {

template <class E>
struct ChoiceWords;  // specialised below: static constexpr std::array words

// The config word of a value ("downpour" for DistMode::kDownpour).
template <class E>
const char* word(E value) {
  return ChoiceWords<E>::words.at(static_cast<size_t>(value));
}
// The value a word names; nullopt for any other word.
template <class E>
std::optional<E> from_word(std::string_view w) {
  const auto& words = ChoiceWords<E>::words;
  for (size_t i = 0; i < words.size(); ++i)
    if (w == words[i]) return static_cast<E>(i);
  return std::nullopt;
}
template <class E>
std::vector<std::string> all_words() {
  return {ChoiceWords<E>::words.begin(), ChoiceWords<E>::words.end()};
}
// The value a word names; throws Error naming `key` and the words for any other word.
template <class E>
E parse_word(const std::string& w, const std::string& key) {
  if (const auto value = from_word<E>(w)) return *value;
  std::string known;
  for (const char* k : ChoiceWords<E>::words) known += (known.empty() ? "" : ", ") + std::string(k);
  throw Error(key + " = \"" + w + "\" is not one of: " + known);
}

// run.backend: where layers run ("onednn", "reference": the CPU; "cuda": the GPU).
enum class Backend { kOneDnn, kReference, kCuda };
template <>
struct ChoiceWords<Backend> {
  static constexpr std::array words{"onednn", "reference", "cuda"};
};

// run.wait (run/wait_policy.hpp).
enum class WaitChoice { kAuto, kSpin, kSleep };
template <>
struct ChoiceWords<WaitChoice> {
  static constexpr std::array words{"auto", "spin", "sleep"};
};

// run.precision: the arithmetic of dense and conv products. kBf16: inputs and weights rounded
// to bfloat16 inside the kernel, products accumulated and written in f32 (outputs, gradients
// and the model's weights stay f32); only the oneDNN backend on a CPU with bf16 instructions
// has it (make_kernel_factory). Other kernels always compute in f32.
enum class Precision { kF32, kBf16 };
template <>
struct ChoiceWords<Precision> {
  static constexpr std::array words{"f32", "bf16"};
};

// optimizer.name
enum class OptimizerKind { kSgd, kAdam };
template <>
struct ChoiceWords<OptimizerKind> {
  static constexpr std::array words{"sgd", "adam"};
};

// optimizer.schedule (optim/lr_schedule.hpp)
enum class Schedule { kConstant, kStep, kExponential, kCosine };
template <>
struct ChoiceWords<Schedule> {
  static constexpr std::array words{"constant", "step", "exponential", "cosine"};
};

// train.nonfinite: a gradient holding NaN/Inf ends the run, or its step is skipped.
enum class NonFinite { kStop, kSkip };
template <>
struct ChoiceWords<NonFinite> {
  static constexpr std::array words{"stop", "skip"};
};

// train.keep and train.keep_metric: the model a run ends with.
enum class Keep { kLast, kBest };
template <>
struct ChoiceWords<Keep> {
  static constexpr std::array words{"last", "best"};
};
enum class KeepMetric { kValLoss, kValAccuracy, kValF1 };
template <>
struct ChoiceWords<KeepMetric> {
  static constexpr std::array words{"val_loss", "val_accuracy", "val_f1"};
};

// distributed.mode: synchronous SGD, or a parameter server (Downpour, delay-compensated).
enum class DistMode { kSync, kDownpour, kDcAsgd };
template <>
struct ChoiceWords<DistMode> {
  static constexpr std::array words{"sync", "downpour", "dcasgd"};
};

// distributed.compression: what travels in 16 bits (kNone: f32).
enum class Compression { kNone, kBf16, kFp16 };
template <>
struct ChoiceWords<Compression> {
  static constexpr std::array words{"none", "bf16", "fp16"};
};

// distributed.outer: local SGD's outer step, an average or DiLoCo's Nesterov step.
enum class OuterStep { kAverage, kNesterov };
template <>
struct ChoiceWords<OuterStep> {
  static constexpr std::array words{"average", "nesterov"};
};

// run.kernels (docs/configuration.md#runkernels); kAuto leaves the choice to the rules (the
// kernels' fits() conditions on shape and CPU).
enum class GemmChoice { kAuto, kOneDnn, kBlas };  // dense and conv products (onednn)
template <>
struct ChoiceWords<GemmChoice> {
  static constexpr std::array words{"auto", "onednn", "blas"};
};
enum class ConvLayoutChoice { kAuto, kBlocked, kNhwc };  // oneDNN convolutions' layout
template <>
struct ChoiceWords<ConvLayoutChoice> {
  static constexpr std::array words{"auto", "blocked", "nhwc"};
};
enum class ConvIsaChoice { kAuto, kAvx2, kNative };  // oneDNN's AVX2 or first-choice kernels
template <>
struct ChoiceWords<ConvIsaChoice> {
  static constexpr std::array words{"auto", "avx2", "native"};
};
enum class PoolChoice { kAuto, kOneDnn };  // kAuto: hpdl's block pool where it fits
template <>
struct ChoiceWords<PoolChoice> {
  static constexpr std::array words{"auto", "onednn"};
};

// In JSON (nlohmann finds these by argument-dependent lookup, before its own rule for enums,
// which would write the number): a choice is written as its word.
template <class J>
void to_json(J& j, Backend v) {
  j = word(v);
}
template <class J>
void to_json(J& j, WaitChoice v) {
  j = word(v);
}
template <class J>
void to_json(J& j, Precision v) {
  j = word(v);
}
template <class J>
void to_json(J& j, OptimizerKind v) {
  j = word(v);
}
template <class J>
void to_json(J& j, Schedule v) {
  j = word(v);
}
template <class J>
void to_json(J& j, NonFinite v) {
  j = word(v);
}
template <class J>
void to_json(J& j, Keep v) {
  j = word(v);
}
template <class J>
void to_json(J& j, KeepMetric v) {
  j = word(v);
}
template <class J>
void to_json(J& j, DistMode v) {
  j = word(v);
}
template <class J>
void to_json(J& j, Compression v) {
  j = word(v);
}
template <class J>
void to_json(J& j, OuterStep v) {
  j = word(v);
}
template <class J>
void to_json(J& j, GemmChoice v) {
  j = word(v);
}
template <class J>
void to_json(J& j, ConvLayoutChoice v) {
  j = word(v);
}
template <class J>
void to_json(J& j, ConvIsaChoice v) {
  j = word(v);
}
template <class J>
void to_json(J& j, PoolChoice v) {
  j = word(v);
}

}  // namespace hpdl
