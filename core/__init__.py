"""Precis core: the context engine and all non-GUI logic. Never imports Qt."""
