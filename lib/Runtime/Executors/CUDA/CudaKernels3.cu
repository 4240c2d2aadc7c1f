// Share 3 of the kernels' instantiations (CudaKernels.h).
#define ZCC_KERNEL_SHARE 3
#include "Executors/CUDA/CudaKernels.cuh"
