"""Stage ②: pandera models and cross-row checks turn text frames into a `FileReport`.

`files.validate_files` is the entry point; `models` holds one pandera model per sheet template,
`distribution` the distribution sheet's row checks a slice at a time, `cross_row` its cross-row
rules, `payments` what they read and the canonical payment frame, `roster` the roster's checks,
`issues` the row-level `Issue`/`FileReport`.
"""
