// libflashsim_attention_abi.so: the fast attention forward and backward (kernels/fast.h) and the
// FP8 forward (kernels/fp8.h) behind a
// small C ABI, for callers that load it at run time (python/flashsim/torch.py, through ctypes), so
// that nothing needs PyTorch or CUDA headers to build against it.
//
// Every function returns 0 on success and a non-zero code on failure; the message of the calling
// thread's last failure is flashsim_abi_last_error(). Tensors are device pointers in the kernels'
// layout: row-major [bh, n, d] with d = 64 or 128 and any n >= 1, 16-byte aligned; lse is the fp32
// natural-log logsumexp per row, [bh, n]. dtype 0 is bf16, 1 is fp16. `stream` is a cudaStream_t
// (PyTorch's torch.cuda.current_stream().cuda_stream); the calls are asynchronous on it.
//
// Built with the FLASHSIM_ATTN_*_FAST_ONLY sources (the fast launchers without the SIMT kernels'
// workloads) and a static CUDA runtime, so the library needs only the driver.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <exception>
#include <initializer_list>
#include <sstream>
#include <stdexcept>
#include <string>

#include "kernels/fast.h"
#include "kernels/fp8.h"
#include "kernels/workload.h"

#define FLASHSIM_ABI extern "C" __attribute__((visibility("default")))

namespace flashsim::gpu {
// kernels/workload.h's CUDA_CHECK reports through this (kernels/util.cu's, which is not linked here).
void cuda_fail(cudaError_t e, const char* what, const char* file, int line) {
  std::ostringstream o;
  o << "CUDA error " << cudaGetErrorName(e) << " (" << cudaGetErrorString(e) << ") at " << file << ":" << line
    << ": " << what;
  throw std::runtime_error(o.str());
}
}  // namespace flashsim::gpu

namespace {

thread_local std::string g_last_error;

enum : int { kOk = 0, kBadArgument = 1, kCudaError = 2, kOther = 3 };

// Runs f, turning what it throws into a code and the thread's message; after launches
// (check_launch), also a launch error the launcher did not report (it checks, but be sure).
template <class F>
int guarded(F&& f, bool check_launch = false) {
  try {
    f();
    if (cudaError_t e = check_launch ? cudaGetLastError() : cudaSuccess; e != cudaSuccess) {
      g_last_error = std::string("CUDA error ") + cudaGetErrorName(e) + ": " + cudaGetErrorString(e);
      return kCudaError;
    }
    g_last_error.clear();
    return kOk;
  } catch (const std::invalid_argument& e) {
    g_last_error = e.what();
    return kBadArgument;
  } catch (const std::runtime_error& e) {
    g_last_error = e.what();
    return kCudaError;
  } catch (const std::exception& e) {
    g_last_error = e.what();
    return kOther;
  } catch (...) {
    g_last_error = "unknown error";
    return kOther;
  }
}

void check_dtype(int dtype) {
  if (dtype != 0 && dtype != 1) throw std::invalid_argument("dtype must be 0 (bf16) or 1 (fp16), got " + std::to_string(dtype));
}

void check_pointers(std::initializer_list<const void*> ps) {
  for (const void* p : ps)
    if (p == nullptr) throw std::invalid_argument("a tensor pointer is null");
}

}  // namespace

// 2: the functions below (1 had no FP8 forward). A caller checks it before anything else.
FLASHSIM_ABI int flashsim_abi_version(void) { return 2; }

FLASHSIM_ABI const char* flashsim_abi_last_error(void) { return g_last_error.c_str(); }

// The GPU (compute capability major * 10 + minor) the library's kernels run on: 90 (sm_90a).
FLASHSIM_ABI int flashsim_abi_cuda_arch(void) { return 90; }

// Bytes of the workspace the backward needs (D = rowsum(dO * O) and the fp32 dQ accumulator).
FLASHSIM_ABI int flashsim_attention_backward_workspace_bytes(int bh, int n, int d, std::size_t* bytes) {
  return guarded([&] {
    if (bytes == nullptr) throw std::invalid_argument("bytes is null");
    *bytes = flashsim::gpu::attention_backward_fast_workspace_bytes(bh, n, d);
  });
}

// O = softmax(Q K^T / sqrt(d)) V (causal: bottom-right aligned mask, as n_q = n_kv here), and lse.
FLASHSIM_ABI int flashsim_attention_forward(int dtype, const void* q, const void* k, const void* v, void* o, float* lse,
                                            int bh, int n, int d, int causal, void* stream) {
  return guarded([&] {
    check_dtype(dtype);
    check_pointers({q, k, v, o, lse});
    auto s = static_cast<cudaStream_t>(stream);
    if (dtype == 0) {
      using T = __nv_bfloat16;
      flashsim::gpu::attention_forward_fast<T>(static_cast<const T*>(q), static_cast<const T*>(k),
                                               static_cast<const T*>(v), static_cast<T*>(o), lse, bh, n, d,
                                               causal != 0, s);
    } else {
      using T = __half;
      flashsim::gpu::attention_forward_fast<T>(static_cast<const T*>(q), static_cast<const T*>(k),
                                               static_cast<const T*>(v), static_cast<T*>(o), lse, bh, n, d,
                                               causal != 0, s);
    }
  }, true);
}

// Bytes of the workspace the FP8 forward needs (the e4m3 Q, K, V^T and their scales), 256-aligned.
FLASHSIM_ABI int flashsim_attention_fp8_workspace_bytes(int bh, int n, int d, std::size_t* bytes) {
  return guarded([&] {
    if (bytes == nullptr) throw std::invalid_argument("bytes is null");
    *bytes = flashsim::gpu::fp8::workspace_bytes(bh, n, d);
  });
}

// The FP8 (e4m3) forward, d = 128: q, k, v (bf16 or fp16) quantized into `workspace` (per block of
// rows, or per tensor when per_tensor; the random Hadamard transform of Q and K when hadamard),
// then O (bf16, whatever the input dtype) and lse as flashsim_attention_forward writes them.
FLASHSIM_ABI int flashsim_attention_forward_fp8(int dtype, const void* q, const void* k, const void* v, void* o,
                                                float* lse, void* workspace, int bh, int n, int d, int causal,
                                                int per_tensor, int hadamard, void* stream) {
  namespace f8 = flashsim::gpu::fp8;
  return guarded([&] {
    check_dtype(dtype);
    check_pointers({q, k, v, o, lse, workspace});
    auto s = static_cast<cudaStream_t>(stream);
    const f8::Operands ops = f8::operands_in(workspace, bh, n, d);
    f8::QuantOptions opt;
    opt.scaling = per_tensor ? f8::Scaling::PerTensor : f8::Scaling::PerBlock;
    opt.hadamard = hadamard != 0;
    if (dtype == 0)
      f8::quantize(static_cast<const __nv_bfloat16*>(q), static_cast<const __nv_bfloat16*>(k),
                   static_cast<const __nv_bfloat16*>(v), ops, opt, s);
    else
      f8::quantize(static_cast<const __half*>(q), static_cast<const __half*>(k), static_cast<const __half*>(v), ops, opt, s);
    f8::attention_forward(ops, static_cast<__nv_bfloat16*>(o), lse, causal != 0, s);
  }, true);
}

// dQ, dK, dV from dO, the forward's O and lse. `workspace` holds
// flashsim_attention_backward_workspace_bytes(bh, n, d) bytes (content irrelevant).
FLASHSIM_ABI int flashsim_attention_backward(int dtype, const void* q, const void* k, const void* v, const void* o,
                                             const void* dout, const float* lse, void* dq, void* dk, void* dv,
                                             void* workspace, int bh, int n, int d, int causal, void* stream) {
  return guarded([&] {
    check_dtype(dtype);
    check_pointers({q, k, v, o, dout, lse, dq, dk, dv, workspace});
    auto s = static_cast<cudaStream_t>(stream);
    if (dtype == 0) {
      using T = __nv_bfloat16;
      flashsim::gpu::attention_backward_fast<T>(static_cast<const T*>(q), static_cast<const T*>(k),
                                                static_cast<const T*>(v), static_cast<const T*>(o),
                                                static_cast<const T*>(dout), lse, static_cast<T*>(dq),
                                                static_cast<T*>(dk), static_cast<T*>(dv), workspace, bh, n, d,
                                                causal != 0, s);
    } else {
      using T = __half;
      flashsim::gpu::attention_backward_fast<T>(static_cast<const T*>(q), static_cast<const T*>(k),
                                                static_cast<const T*>(v), static_cast<const T*>(o),
                                                static_cast<const T*>(dout), lse, static_cast<T*>(dq),
                                                static_cast<T*>(dk), static_cast<T*>(dv), workspace, bh, n, d,
                                                causal != 0, s);
    }
  }, true);
}
