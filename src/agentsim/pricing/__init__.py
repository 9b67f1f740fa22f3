"""Prices: explicit tables and the genai-prices catalog turned into per-token rates; the cost of a call."""
