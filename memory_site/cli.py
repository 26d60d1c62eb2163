"""The `mnemo` command of an installed package: `manage.py` under another name.

`mnemo migrate`, `mnemo serve`, `mnemo issue_token alice --create-user` and every other
management command work the same from `pip install .` as from a checkout.
"""

from __future__ import annotations

import os
import sys


def main(argv: list[str] | None = None) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_site.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(["mnemo", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    main()
