"""Shared by the unit tests: captured real outputs (FIXTURES), help texts, model shapes, strategies."""

from pathlib import Path

# Captured outputs of real tools, each directory with a README naming source and version.
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
