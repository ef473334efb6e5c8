"""``python -m fundpipe.app``: the `fundpipe` command, for when the console script is absent."""

from fundpipe.app.cli import main

if __name__ == "__main__":
    main()
