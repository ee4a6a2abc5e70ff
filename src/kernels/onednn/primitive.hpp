// What every oneDNN kernel is built from: the engine and streams (Engine), a primitive with
// its argument memories and its own scratchpad (Primitive), a tensor converted to the layout or
// data type a primitive wants (Relayout), a cap on the threads (ThreadCap), build(), which
// turns a oneDNN failure during construction into an hpdl::Error naming the kernel, and
// may_use(), what oneDNN's kernels may run on this CPU.
// Internal to the oneDNN backend (onednn_kernels.cpp and the kernels in files of their own).
#pragma once
#include <omp.h>

#include <algorithm>
#include <dnnl.hpp>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "../cpu/aligned_floats.hpp"
#include "hpdl/core/error.hpp"
#include "hpdl/kernels/kernels.hpp"

namespace hpdl::onednn {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

// The engine, and a stream for each OpenMP thread: the branches of a layer
// (nn/branches.cpp) may run on threads of their own at once, and a oneDNN stream is not for
// concurrent use (each Primitive owns its scratchpad and argument memories, so nothing else is
// shared between them).
struct Engine {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  std::vector<dnnl::stream> streams;
  // The threads of the kernels built from now on (KernelFactory::use_one_thread): 0, all the
  // rank's threads; 1 for a model whose step is too small to split.
  int kernel_threads = 0;
  Engine() {
    const int n = std::max({1, omp_get_max_threads(), omp_get_num_procs()});
    for (int i = 0; i < n; ++i) streams.emplace_back(engine);
  }
  dnnl::stream& stream() { return streams[size_t(omp_get_thread_num()) % streams.size()]; }
};

// Caps the OpenMP threads of the calling thread for its lifetime (threads <= 0, or inside a
// parallel region where oneDNN runs on the calling thread anyway: no cap).
class ThreadCap {
 public:
  explicit ThreadCap(int threads) {
    if (threads <= 0 || omp_in_parallel() || threads >= omp_get_max_threads()) return;
    saved_ = omp_get_max_threads();
    omp_set_num_threads(threads);
  }
  ~ThreadCap() {
    if (saved_ > 0) omp_set_num_threads(saved_);
  }
  ThreadCap(const ThreadCap&) = delete;
  ThreadCap& operator=(const ThreadCap&) = delete;

 private:
  int saved_ = 0;
};

// One primitive with its argument memories (data handles re-pointed on every call) and
// its own scratchpad, so execution never allocates. It runs on the threads the backend gave
// the kernels when it was built (Engine::kernel_threads).
class Primitive {
 public:
  Primitive() = default;
  Primitive(Engine& be, dnnl::primitive prim, const memory::desc& scratch,
            std::initializer_list<std::pair<int, memory::desc>> args)
      : be_(&be), prim_(std::move(prim)), threads_(be.kernel_threads) {
    for (const auto& [arg, md] : args) args_[arg] = memory(md, be.engine, DNNL_MEMORY_NONE);
    if (scratch.get_size() > 0) {
      scratch_.resize((scratch.get_size() + sizeof(float) - 1) / sizeof(float));
      args_[DNNL_ARG_SCRATCHPAD] = memory(scratch, be.engine, scratch_.data());
    }
  }

  void run(std::initializer_list<std::pair<int, const void*>> ptrs) {
    for (const auto& [arg, ptr] : ptrs) args_.at(arg).set_data_handle(const_cast<void*>(ptr));
    dnnl::stream& stream = be_->stream();
    const ThreadCap cap(threads_);
    prim_.execute(stream, args_);
    stream.wait();
  }

 private:
  Engine* be_ = nullptr;
  dnnl::primitive prim_;
  int threads_ = 0;
  std::unordered_map<int, memory> args_;
  AlignedFloats scratch_;
};

template <typename P>
Primitive make_primitive(Engine& be, const typename P::primitive_desc& pd,
                         std::initializer_list<std::pair<int, memory::desc>> args) {
  return Primitive(be, P(pd), pd.scratchpad_desc(), args);
}

inline dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr a;
  a.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return a;
}

inline memory::desc plain(memory::dims dims, tag t) { return memory::desc(dims, dt::f32, t); }

// Whether oneDNN may run kernels of `isa` here: the CPU has it and ONEDNN_MAX_CPU_ISA allows it.
inline bool may_use(dnnl::cpu_isa isa) {
  return (int(dnnl::get_effective_cpu_isa()) & int(isa)) == int(isa);
}

// A tensor kept in the caller's plain layout that a primitive wants in its own (blocked)
// layout: converts through a cached reorder and a private buffer only when they differ.
class Relayout {
 public:
  Relayout() = default;
  Relayout(Engine& be, const memory::desc& plain, const memory::desc& wanted, bool to_plain)
      : same_(plain == wanted) {
    if (same_) return;
    buffer_.resize(wanted.get_size() / sizeof(float) + 1);
    const memory::desc& from = to_plain ? wanted : plain;
    const memory::desc& to = to_plain ? plain : wanted;
    reorder_ =
        Primitive(be, dnnl::reorder(dnnl::reorder::primitive_desc(be.engine, from, be.engine, to)),
                  memory::desc(), {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
  }
  // Input side: the data of `plain` in the wanted layout.
  const void* in(const void* plain) {
    if (same_) return plain;
    reorder_.run({{DNNL_ARG_FROM, plain}, {DNNL_ARG_TO, buffer_.data()}});
    return buffer_.data();
  }
  // The data last converted by in() (valid until the next in()).
  const void* last(const void* plain) const { return same_ ? plain : buffer_.data(); }
  // Output side: where the primitive writes, then finish() copies it out to `plain`.
  void* target(void* plain) { return same_ ? plain : buffer_.data(); }
  void finish(void* plain) {
    if (!same_) reorder_.run({{DNNL_ARG_FROM, buffer_.data()}, {DNNL_ARG_TO, plain}});
  }

 private:
  bool same_ = true;
  Primitive reorder_;
  AlignedFloats buffer_;
};

// Turns a oneDNN failure during kernel construction into an hpdl::Error naming the kernel.
template <typename F>
auto build(const char* what, F&& f) {
  try {
    return f();
  } catch (const dnnl::error& e) {
    fail_call(std::string("oneDNN ") + what,
              std::string(e.what()) + " (status " + std::to_string(int(e.status)) + ")");
  }
}

// The same for a kernel built on Engine::kernel_threads: oneDNN splits a primitive's work
// over the threads present when it is created and sizes its scratchpad for them, so the cap
// holds while the kernel's primitives are created and on each of their runs (Primitive).
template <typename F>
auto build(Engine& be, const char* what, F&& f) {
  const ThreadCap cap(be.kernel_threads);
  return build(what, std::forward<F>(f));
}

// Kernels in files of their own.
std::unique_ptr<BatchNormKernel> make_batch_norm(Engine& be, const BatchNormDims& d);
// A convolution in what choices.cpp's tables choose for d under run.kernels. keep_layouts
// false: the kernel offers no native blocks (ConvKernel::native_blocks), so every
// activation stays plain (activations = "plain").
std::unique_ptr<ConvKernel> make_conv(Engine& be, const ConvDims& d, const KernelChoices& run,
                                      bool keep_layouts);

}  // namespace hpdl::onednn
