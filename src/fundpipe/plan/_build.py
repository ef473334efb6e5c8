"""Building the plan: the ordered requests of every phase, batched and de-duplicated.

Part of :mod:`fundpipe.plan` (:func:`build_plan` is re-exported there). Which roster rows are
payment instructions, and with which fields, is :mod:`~fundpipe.plan._roster_instructions`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from fundpipe.plan._held import HeldInstruction
from fundpipe.plan._instructions import _last_four, instruction_fingerprint
from fundpipe.plan._match import (
    _classify,
    _contact_of,
    _group_distributions,
    _held_investors,
)
from fundpipe.plan._model import (
    MAX_BATCH,
    FileInput,
    Plan,
    PlannedDistribution,
    PlannedFile,
    PlannedRequest,
    Ref,
    ServiceState,
)
from fundpipe.plan._roster_instructions import (
    PUBLIC_FIELDS_BY_TYPE,
    instruction_entities_to_read,
    roster_instructions,
)
from fundpipe.plan._values import _blank, _chunks, _contact_rows, _entity_rows, _pick

__all__ = ["PUBLIC_FIELDS_BY_TYPE", "build_plan", "instruction_entities_to_read"]


def build_plan(
    files: Sequence[FileInput],
    state: ServiceState,
    *,
    batch_size: int = MAX_BATCH,
    exclude: Iterable[str] = (),
) -> Plan:
    """Plan the submission of ``files`` against ``state``.

    ``exclude`` names file hashes that pre-flight refused: they are classified and shown but
    contribute no request. Files with a conflicting distribution contribute none either.
    """
    if not 1 <= batch_size <= MAX_BATCH:
        raise ValueError(f"batch_size must be within 1..{MAX_BATCH}")
    excluded = set(exclude)
    roster_refs: set[str] = set()
    for f in files:
        for e in _entity_rows(f):
            ref = _pick(e, "entity_external_reference", "external_reference")
            if ref:
                roster_refs.add(ref)

    distributions: list[PlannedDistribution] = []
    for f in files:
        distributions.extend(_group_distributions(f, state, roster_refs))
    distributions = _classify(distributions, state)

    conflict_files = {d.file_hash for d in distributions if d.action == "conflict"}
    planned_files = []
    for f in files:
        mine = [d for d in distributions if d.file_hash == f.file_hash]
        planned_files.append(
            PlannedFile(
                file_hash=f.file_hash,
                source_file=f.source_file,
                rows=sum(len(d.payments) for d in mine),
                distributions=len(mine),
                total_cents=sum(d.total_cents for d in mine),
                conflict=f.file_hash in conflict_files,
                excluded=f.file_hash in excluded,
            )
        )
    active = [f for f in files if f.file_hash not in excluded and f.file_hash not in conflict_files]
    active_hashes = {f.file_hash for f in active}
    held = _held_investors(active, state, distributions)
    held_refs = {h.external_reference for h in held}
    held_distributions = {pair for h in held for pair in h.distributions}

    requests: list[PlannedRequest] = []
    requests += _entity_requests(active, state, held_refs)
    requests += _contact_requests(active, state)
    requests += _association_requests(active, state, held_refs)
    instruction_requests, held_instructions = _instruction_requests(active, state, held_refs)
    requests += instruction_requests
    by_file: dict[str, list[PlannedDistribution]] = defaultdict(list)
    for d in distributions:
        if (d.file_hash, d.external_reference) in held_distributions:
            continue  # pays a probable duplicate investor: held for a person
        if d.action == "create" and d.file_hash in active_hashes:
            by_file[d.file_hash].append(d)
    for f in active:
        # sorted by reference so a resumed run re-cuts the same batches (and so the same keys)
        mine = sorted(by_file.get(f.file_hash, []), key=lambda d: d.external_reference)
        for chunk in _chunks(mine, batch_size):
            refs = tuple(d.external_reference for d in chunk)
            requests.append(
                PlannedRequest(
                    phase="distributions",
                    method="POST",
                    path="/v1/distributions",
                    body=tuple(d.element() for d in chunk),
                    file_hashes=(f.file_hash,),
                    label=f"{len(chunk)} distributions of {f.source_file} ({refs[0]}…{refs[-1]})",
                    distribution_refs=refs,
                    needs_ids=any(
                        isinstance(p.entity, Ref) or any(isinstance(c, Ref) for c in p.notify)
                        for d in chunk
                        for p in d.payments
                    ),
                )
            )
    return Plan(
        org_id=state.org_id,
        files=tuple(planned_files),
        distributions=tuple(distributions),
        requests=tuple(requests),
        batch_size=batch_size,
        held=held,
        held_instructions=held_instructions,
    )


def _owners(rows: Iterable[tuple[str, str]]) -> dict[str, tuple[str, ...]]:
    owners: dict[str, set[str]] = defaultdict(set)
    for key, file_hash in rows:
        owners[key].add(file_hash)
    return {k: tuple(sorted(v)) for k, v in owners.items()}


def _entity_requests(
    files: Sequence[FileInput], state: ServiceState, held: set[str]
) -> list[PlannedRequest]:
    wanted: dict[str, dict[str, Any]] = {}
    owner_rows = []
    for f in files:
        for e in _entity_rows(f):
            ref = _pick(e, "entity_external_reference", "external_reference")
            if not ref or ref in state.entities_by_ref or ref in held:
                continue
            owner_rows.append((ref, f.file_hash))
            element: dict[str, Any] = {
                "name": _pick(e, "entity_name", "name") or ref,
                "type": _pick(e, "entity_type", "type") or "other_entity",
                "external_reference": ref,
            }
            external_type = _pick(e, "entity_external_type", "external_type")
            if external_type:
                element["external_type"] = external_type
            wanted.setdefault(ref, element)
    owners = _owners(owner_rows)
    ordered = sorted(wanted)
    return [
        PlannedRequest(
            phase="entities",
            method="POST",
            path="/v1/entities",
            body=tuple(wanted[r] for r in chunk),
            file_hashes=tuple(sorted({h for r in chunk for h in owners[r]})),
            label=f"{len(chunk)} entities ({chunk[0]}…{chunk[-1]})",
        )
        for chunk in _chunks(ordered, MAX_BATCH)
    ]


def _contact_requests(files: Sequence[FileInput], state: ServiceState) -> list[PlannedRequest]:
    wanted: dict[str, dict[str, Any]] = {}
    references: dict[str, str | None] = {}
    owner_rows = []
    for f in files:
        for c in _contact_rows(f):
            email = (_pick(c, "contact_email", "email") or "").lower()
            if not email or email in state.contacts_by_email:
                continue
            owner_rows.append((email, f.file_hash))
            # Name and email only: the public description's contact input allows no
            # `external_reference` (the interface shows no body fields). A contact is known
            # again by its email; the roster's own reference stays in the ledger.
            element: dict[str, Any] = {
                "name": _pick(c, "contact_name", "name") or email,
                "email": email,
            }
            if email not in wanted:
                references[email] = _pick(c, "contact_external_reference", "external_reference")
            wanted.setdefault(email, element)
    owners = _owners(owner_rows)
    ordered = sorted(wanted)
    return [
        PlannedRequest(
            phase="contacts",
            method="POST",
            path="/v1/contacts",
            body=tuple(wanted[e] for e in chunk),
            file_hashes=tuple(sorted({h for e in chunk for h in owners[e]})),
            label=f"{len(chunk)} contacts",
            own_references=tuple(references.get(e) or "" for e in chunk),
        )
        for chunk in _chunks(ordered, MAX_BATCH)
    ]


def _contact_entity_refs(row: dict[str, Any]) -> list[str]:
    text = _pick(row, "entity_external_reference", "entity", "entities") or ""
    return [t.strip() for t in text.split(";") if t.strip()]


def _associated(contact_id: str, entity_id: str, state: ServiceState) -> bool:
    """Whether the association exists, as far as the service lets us know.

    The documented contact record does not list its entities: then a contact and an entity
    that both exist already are taken as associated (the association was planned when one of
    them was created), so a re-run does not ask again every night.
    """
    known = state.contact_entities.get(contact_id)
    return known is None or entity_id in known


def _association_requests(
    files: Sequence[FileInput], state: ServiceState, held: set[str]
) -> list[PlannedRequest]:
    wanted: dict[str, set[str]] = defaultdict(set)  # entity key -> contact keys
    owner_rows = []
    for f in files:
        for c in _contact_rows(f):
            email = (_pick(c, "contact_email", "email") or "").lower()
            if not email:
                continue
            for entity in _contact_entity_refs(c):
                if entity in held:
                    continue
                contact_id = state.contacts_by_email.get(email)
                entity_id = (
                    entity if entity.startswith("ent_") else state.entities_by_ref.get(entity)
                )
                if contact_id and entity_id and _associated(contact_id, entity_id, state):
                    continue
                wanted[entity].add(email)
                owner_rows.append((entity, f.file_hash))
    owners = _owners(owner_rows)
    out = []
    for entity in sorted(wanted):
        entity_value: str | Ref
        if entity.startswith("ent_"):
            entity_value = entity
        else:
            entity_value = state.entities_by_ref.get(entity) or Ref("entity", entity)
        contacts = sorted(wanted[entity])
        for chunk in _chunks(contacts, MAX_BATCH):
            body = tuple({"id": _contact_of(email, state)} for email in chunk)
            if isinstance(entity_value, Ref):
                path, path_ref = "/v1/entities/{ent_id}/contacts", entity_value
            else:
                path, path_ref = f"/v1/entities/{entity_value}/contacts", None
            out.append(
                PlannedRequest(
                    phase="associations",
                    method="POST",
                    path=path,
                    body=body,
                    file_hashes=owners[entity],
                    label=f"associate {len(chunk)} contacts with {entity}",
                    path_ref=path_ref,
                )
            )
    return out


def _instruction_requests(
    files: Sequence[FileInput], state: ServiceState, held: set[str]
) -> tuple[list[PlannedRequest], tuple[HeldInstruction, ...]]:
    # Only entities without any instructions at the service get some. An instruction for an
    # entity that has some is matched by its content fingerprint (entity + content, as a read
    # shows it: no `external_reference` needed); one matching none is held: replacing or
    # adding instructions is a decision for a person, not for a re-run.
    wanted: dict[str, list[dict[str, Any]]] = defaultdict(list)
    references: dict[str, list[str]] = defaultdict(list)
    owner_rows = []
    conflicts: dict[tuple[str, str, str], HeldInstruction] = {}
    for f, p, entity, entity_id, instruction in roster_instructions(files, state, held):
        if entity_id and entity_id in state.entities_with_instructions:
            fingerprint = instruction_fingerprint(instruction)
            known = state.instruction_fingerprints.get(entity_id, frozenset())
            if fingerprint in known:
                continue  # the entity has this one
            key = (f.file_hash, entity_id, fingerprint or "")
            if key not in conflicts:
                row = p.get("row")
                conflicts[key] = HeldInstruction(
                    file_hash=f.file_hash,
                    source_file=f.source_file,
                    sheet=_pick(p, "sheet"),
                    row=int(row) if row is not None and not _blank(row) else None,
                    entity=entity,
                    entity_id=entity_id,
                    account_last_four=_last_four(instruction),
                    unreadable=entity_id in state.instructions_unreadable,
                )
            continue
        if instruction not in wanted[entity]:
            wanted[entity].append(instruction)
            # not sent (the public instruction inputs have no such field): kept in the ledger
            references[entity].append(
                _pick(p, "payment_external_reference", "external_reference") or ""
            )
        owner_rows.append((entity, f.file_hash))
    owners = _owners(owner_rows)
    ordered = sorted(wanted)
    out = []
    for chunk in _chunks(ordered, MAX_BATCH):
        body = []
        for entity in chunk:
            entity_value: str | Ref = (
                entity
                if entity.startswith("ent_")
                else state.entities_by_ref.get(entity) or Ref("entity", entity)
            )
            body.append({"entity": entity_value, "payment_instructions": wanted[entity]})
        out.append(
            PlannedRequest(
                phase="payment_instructions",
                method="POST",
                path="/v1/payment_instructions",
                body=tuple(body),
                file_hashes=tuple(sorted({h for e in chunk for h in owners[e]})),
                label=f"payment instructions for {len(chunk)} entities",
                own_references=tuple(r for e in chunk for r in references[e]),
            )
        )
    return out, tuple(conflicts.values())
