"""Checking the tool and the machine: fixture cases, selftest, nvcc builds, the GPU, calibration, doctor."""
