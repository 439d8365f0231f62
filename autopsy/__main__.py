"""``python -m autopsy``."""

from autopsy._entry import main

main()
