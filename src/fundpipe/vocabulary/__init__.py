"""The words every reader of a night shares: an exception's kind and state, the exception record,
and a night's verdict — one type each, below every package that reads them.

```python
KINDS[ExceptionKind.SHORTFALL].words           # "Vehicle short of funds"
what_to_do("shortfall")                        # the general advice, when a view gives none
record = ExceptionRecord.from_json(data)       # any of its JSON forms read back
record.as_json("night")                        # `fundpipe run --json`, a child's hand-off
Verdict.NEEDS_A_PERSON.shout                   # "NEEDS A PERSON", as the Prefect verdict says it
```

- :class:`ExceptionKind` and :data:`KINDS`, the one table of what each kind means: its words (the
  workbook's, the run log's, the verdict's), what a person does about it when the view gives no
  action of its own, its materiality rule, and the opening words of the actions the warehouse's
  `exceptions` view writes for it (`schemas/warehouse.sql` keeps those texts, with the amounts and
  names in them; `tests/test_vocabulary.py` checks both say the same).
- :class:`ExceptionState`: open → acknowledged → resolved (`fundpipe.reconcile.lifecycle`).
- :class:`ExceptionRecord`: one exception, whichever reader holds it — the lifecycle's listing
  (`fundpipe exceptions list`), a night's exceptions (the run log, events, artifacts, the
  parent's table), the published night the morning view reads. It has one serialiser with one
  form per output (:data:`JSON_FORMS`), each keeping that output's keys as they were.
- :class:`Verdict`: what one organization's night asks of a person (`fundpipe.nights`), and the
  one Prefect form of "needs a person" (:data:`NEEDS_A_PERSON_STATE`, of
  :data:`NEEDS_A_PERSON_STATE_TYPE` FAILED) every flow that can end needing a person ends in.

Pure: no I/O, no pandas, no Prefect; it imports only `fundpipe.cents`. One private module per
idea (`_kinds`, `_record`, `_verdict`); import them from here.
"""

from fundpipe.vocabulary._kinds import (
    KINDS,
    LOOK_INTO_IT,
    ExceptionKind,
    KindMeaning,
    is_material,
    kind_words,
    what_to_do,
)
from fundpipe.vocabulary._record import JSON_FORMS, ExceptionRecord, ExceptionState, JsonForm
from fundpipe.vocabulary._verdict import (
    NEEDS_A_PERSON_STATE,
    NEEDS_A_PERSON_STATE_TYPE,
    Verdict,
)

__all__ = [
    "JSON_FORMS",
    "KINDS",
    "LOOK_INTO_IT",
    "NEEDS_A_PERSON_STATE",
    "NEEDS_A_PERSON_STATE_TYPE",
    "ExceptionKind",
    "ExceptionRecord",
    "ExceptionState",
    "JsonForm",
    "KindMeaning",
    "Verdict",
    "is_material",
    "kind_words",
    "what_to_do",
]
