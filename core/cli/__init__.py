"""The `precis` command line."""
