"""Pure planning: validated frames + what the service already has → ordered requests.

No network, no clock, no filesystem. The plan is a list of *phases* run in order:

1. ``entities``              roster entities whose ``external_reference`` the service lacks
2. ``contacts``              roster contacts whose email the service lacks
3. ``associations``          contact ↔ entity links the service lacks
4. ``payment_instructions``  instructions for entities that have none at the service
5. ``distributions``         distributions to create, in batches of at most ``batch_size``

A request of a later phase may reference an object an earlier phase creates (a roster entity
named by its ``external_reference``, a contact named by its email). Such references are
:class:`Ref` placeholders in the planned body; :meth:`PlannedRequest.resolve` replaces them with
the ``ent_``/``cnt_`` ids once known and only then derives the request's ``Idempotency-Key`` —
so the key is a function of the concrete body, as DESIGN asks, and the same after a restart.

Every distribution is classified: ``create`` (nothing with its ``external_reference`` exists),
``link`` (the same content exists) or ``conflict`` (the reference exists with other content).
A file with a conflict is planned as a whole as a conflict: nothing of it is sent. A roster
investor whose reference matches nothing but whose exact name and type match one existing
entity is *held* (:class:`HeldInvestor`): not created, its distributions not sent, the rest of
the file sent as usual. A roster payment instruction for an entity that already has
instructions is matched by its content fingerprint (:func:`instruction_fingerprint`); one that
matches none is held too (:class:`HeldInstruction`): not sent, a person decides.

The package is split by concern — :mod:`~fundpipe.plan._model` (the types),
:mod:`~fundpipe.plan._values` (value coercion, masking, references),
:mod:`~fundpipe.plan._match` (matching against the service state),
:mod:`~fundpipe.plan._instructions` (payment instructions matched by content),
:mod:`~fundpipe.plan._roster_instructions` (roster rows as payment instructions) and
:mod:`~fundpipe.plan._build` (the requests) — and everything public is imported from here.
"""

from fundpipe.plan._build import build_plan
from fundpipe.plan._held import HeldInstruction
from fundpipe.plan._instructions import FINGERPRINT_FIELDS, instruction_fingerprint
from fundpipe.plan._match import references, same_content
from fundpipe.plan._model import (
    MAX_BATCH,
    PHASES,
    Action,
    FileInput,
    HeldInvestor,
    IdMap,
    KeyFunction,
    Phase,
    Plan,
    PlannedDistribution,
    PlannedFile,
    PlannedPayment,
    PlannedRequest,
    Ref,
    ResolvedRequest,
    ServiceDistribution,
    ServicePayment,
    ServiceState,
    UnresolvedReferenceError,
)
from fundpipe.plan._roster_instructions import instruction_entities_to_read
from fundpipe.plan._values import derived_reference, display_body, mask_account

__all__ = [
    "FINGERPRINT_FIELDS",
    "MAX_BATCH",
    "PHASES",
    "Action",
    "FileInput",
    "HeldInstruction",
    "HeldInvestor",
    "IdMap",
    "KeyFunction",
    "Phase",
    "Plan",
    "PlannedDistribution",
    "PlannedFile",
    "PlannedPayment",
    "PlannedRequest",
    "Ref",
    "ResolvedRequest",
    "ServiceDistribution",
    "ServicePayment",
    "ServiceState",
    "UnresolvedReferenceError",
    "build_plan",
    "derived_reference",
    "display_body",
    "instruction_entities_to_read",
    "instruction_fingerprint",
    "mask_account",
    "references",
    "same_content",
]
