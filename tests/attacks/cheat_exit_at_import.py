"""sys.exit(0) while being imported: "the tests ran and nothing failed"."""
import sys

sys.exit(0)
CHEAT = False
