"""`python -m ember ...` and the `ember` console script: the `ember` command line shipped in the
package (devices, plugins, train, convert, ...)."""

import os
import sys


def main() -> None:
    """Runs the packaged `ember` command with this process's arguments."""
    binary = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "ember")
    if not os.path.exists(binary):
        sys.exit(f"ember: the command line is not part of this installation ({binary} is missing)")
    os.execv(binary, [binary] + sys.argv[1:])


if __name__ == "__main__":
    main()
