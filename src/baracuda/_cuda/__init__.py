"""The CUDA layer: the only package that talks to CUDA (NVRTC, driver, DLPack views)."""
