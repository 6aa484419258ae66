"""Where the unit tests find their captured real outputs."""

from pathlib import Path

# Captured outputs of real tools, each directory with a README naming source and version.
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
