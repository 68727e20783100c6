/* cudamigrate: empty stand-in for curand_mtgp32_kernel.h, which clang's CUDA wrapper includes but minimal toolkits lack; searched last (-idirafter). */
