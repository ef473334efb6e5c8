"""The command-line shell: typer commands that parse arguments, call library functions and
render results (`commands`, `common`, `alerts`, `exceptions`, `sandbox`, `render`, `process`,
`record`: restore and backup).

`fundpipe.app.cli:main` is the `fundpipe` console script.
"""

from fundpipe.app.cli.commands import app, main

__all__ = ["app", "main"]
