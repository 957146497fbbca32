// The generic kernel's interface: one template, defined in neighbour_sum.cu and instantiated there for float, double
// and int. Callers in other translation units (generic_kernel.cu) only see this declaration; nothing needs -rdc,
// because the kernel's whole view of the symmetric heap arrives in its arguments.
#pragma once

#include <symm/symm.hpp>

#include <cuda_runtime.h>

//! out[i] = in[i] on PE left + in[i] here + in[i] on PE right, for every i; ordered on `stream`.
template <class T>
void neighbour_sum(symm::array_ref<const T> in, symm::array_ref<T> out, int left, int right, cudaStream_t stream);

extern template void neighbour_sum<float>(symm::array_ref<const float>, symm::array_ref<float>, int, int, cudaStream_t);
extern template void
neighbour_sum<double>(symm::array_ref<const double>, symm::array_ref<double>, int, int, cudaStream_t);
extern template void neighbour_sum<int>(symm::array_ref<const int>, symm::array_ref<int>, int, int, cudaStream_t);
