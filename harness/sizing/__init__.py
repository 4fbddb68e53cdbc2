"""Sizing: how many users or requests per second a server keeps within a promise, found by measuring."""
