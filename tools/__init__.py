"""Repository tools: programs that maintain the repository's own files (not shipped in the wheel)."""
