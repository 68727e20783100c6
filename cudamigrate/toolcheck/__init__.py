"""Checking the tool and the machine: fixture cases (`fixtures`), `selftest`, nvcc builds (`build`), the GPU
(`gpu`), calibration (`calibrate`), `doctor`. Proving a fix on the user's own code is fixproof/'s job."""
