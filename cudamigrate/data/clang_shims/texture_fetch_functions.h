/* cudamigrate: empty stand-in for a header CUDA 13 removed (texture references) but clang's CUDA wrapper still includes; searched last (-idirafter). */
