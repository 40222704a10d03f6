"""Reusable constructs, one per file; each takes keyword-only typed arguments."""
