"""Recommended local models: the catalogue (data in the repository), what of it is on disk, and downloads on request."""
