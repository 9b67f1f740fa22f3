"""Importers of recorded measurements and agent sessions (benchmarks, OpenTelemetry, Claude Code, Codex)."""
