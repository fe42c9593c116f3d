"""Axis scans: cumsum, cumprod, cummax, cummin, logcumsumexp, forward and backward."""
