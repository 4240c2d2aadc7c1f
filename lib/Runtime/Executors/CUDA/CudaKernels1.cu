// Share 1 of the kernels' instantiations (CudaKernels.h).
#define ZCC_KERNEL_SHARE 1
#include "Executors/CUDA/CudaKernels.cuh"
