"""The Litestar application of the control plane."""
