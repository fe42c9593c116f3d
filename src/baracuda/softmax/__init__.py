"""Softmax-family ops: sparsemax forward and backward."""
