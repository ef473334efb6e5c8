"""Stage ②: pandera models and cross-row checks turn text frames into a `FileReport`.

`files.validate_files` is the entry point; `models` holds one pandera model per sheet template,
`distribution` and `roster` the cross-row rules, `issues` the row-level `Issue`/`FileReport`.
"""
