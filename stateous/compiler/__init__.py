"""The compiler: load flow.py, validate, prove guards exclusive, write the graph file."""
