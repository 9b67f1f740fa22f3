"""Measuring real endpoints (the live probe) and calibrating speed profiles from measurements."""
