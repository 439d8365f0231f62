"""``python -m autopsy``."""

from autopsy.cli import main

main()
