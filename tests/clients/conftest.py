"""The clients under clients/ are their own packages: the tests import the Python one from its
source tree, as `pip install clients/python` would install it."""

from __future__ import annotations

import sys
from pathlib import Path

CLIENTS = Path(__file__).resolve().parents[2] / "clients"
sys.path.insert(0, str(CLIENTS / "python" / "src"))
