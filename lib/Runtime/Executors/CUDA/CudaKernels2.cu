// Share 2 of the kernels' instantiations (CudaKernels.h).
#define ZCC_KERNEL_SHARE 2
#include "Executors/CUDA/CudaKernels.cuh"
