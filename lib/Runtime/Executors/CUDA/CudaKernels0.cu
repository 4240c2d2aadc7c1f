// Share 0 of the kernels' instantiations (CudaKernels.h).
#define ZCC_KERNEL_SHARE 0
#include "Executors/CUDA/CudaKernels.cuh"
