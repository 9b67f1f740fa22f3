"""Recorded agent sessions re-timed and re-priced under other speeds, tiers and models."""
