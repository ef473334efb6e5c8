"""Idempotency keys, models, pagination and configuration safety of the client."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta, timezone

import httpx
import pytest
from fundclient_helpers import BASE_URL, envelope, make_settings
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from fundpipe.client import (
    FundClient,
    canonical_json,
    errors,
    idempotency_key,
    models,
)

BODY = [
    {
        "name": "Q4",
        "vehicle": "veh_demo1",
        "distribution_date": "2026-12-15T09:00:00-05:00",
        "payments": [{"amount": 125000, "currency": "USD", "entity": "ent_demo1"}],
        "external_reference": "Ré-1",
    }
]
# Pinned: this value must never change, or re-runs after a crash would send new keys.
GOLDEN_KEY = "fp1_1e4fe89b064082d2bfeefc1b48ff76efdefce682d4690ecaa20c47d951d09765"


# --- idempotency keys ------------------------------------------------------------------------


def test_key_recipe_is_pinned():
    assert idempotency_key("org_demo", "post", "/v1/distributions", BODY) == GOLDEN_KEY
    canonical = canonical_json(["fp1", "org_demo", "POST", "/v1/distributions", BODY])
    assert canonical.startswith(
        '["fp1","org_demo","POST","/v1/distributions",[{"distribution_date"'
    )
    assert "R\\u00e9-1" in canonical  # ensure_ascii
    assert "fp1_" + hashlib.sha256(canonical.encode()).hexdigest() == GOLDEN_KEY


@given(st.permutations(list(BODY[0].items())))
def test_key_ignores_dict_key_order(items):
    assert idempotency_key("org_demo", "POST", "/v1/distributions", [dict(items)]) == GOLDEN_KEY


def test_key_depends_on_org_method_path_and_body():
    other_amount = [
        {**BODY[0], "payments": [{"amount": 125001, "currency": "USD", "entity": "ent_demo1"}]}
    ]
    keys = {
        GOLDEN_KEY,
        idempotency_key("org_other", "POST", "/v1/distributions", BODY),
        idempotency_key("org_demo", "PUT", "/v1/distributions", BODY),
        idempotency_key("org_demo", "POST", "/v1/entities", BODY),
        idempotency_key("org_demo", "POST", "/v1/distributions", other_amount),
    }
    assert len(keys) == 5


def test_key_of_a_model_equals_key_of_its_dict():
    model = models.DistributionCreate.model_validate(BODY[0])
    assert idempotency_key("org_demo", "POST", "/v1/distributions", [model]) == GOLDEN_KEY


def test_float_money_is_refused():
    body = [{**BODY[0], "payments": [{"amount": 1250.0, "currency": "USD", "entity": "ent_demo1"}]}]
    with pytest.raises(TypeError, match="integer cents"):
        idempotency_key("org_demo", "POST", "/v1/distributions", body)


# --- models ----------------------------------------------------------------------------------


def test_distribution_accepts_offset_and_z_dates_and_ignores_unknown_fields():
    offset = models.Distribution.model_validate(
        {"id": "dst_1", "distribution_date": "2026-12-15T09:00:00-05:00", "new_field": 1}
    )
    zulu = models.Distribution.model_validate(
        {"id": "dst_1", "distribution_date": "2026-12-15T14:00:00Z"}
    )
    assert offset.distribution_date == zulu.distribution_date
    assert offset.distribution_date.utcoffset() == timedelta(hours=-5)
    assert zulu.distribution_date.tzinfo is not None
    assert not hasattr(offset, "new_field")


def test_naive_datetimes_are_refused():
    with pytest.raises(ValidationError):
        models.Vehicle.model_validate({"id": "veh_1", "created_at": "2026-12-15T09:00:00"})


def test_money_is_integer_cents():
    account = models.FinancialAccount.model_validate(
        {
            "id": "fa_1",
            "vehicle": "veh_1",
            "balance": {
                "total": 500_000_000,
                "available": 499_999_999,
                "total_end_of_last_month": 1,
                "currency": "USD",
            },
        }
    )
    assert account.balance.total == 500_000_000
    assert isinstance(account.balance.available, int)
    with pytest.raises(ValidationError):
        models.DistributionPayment.model_validate(
            {"id": "dpmt_1", "amount": 10.5, "currency": "USD"}
        )
    with pytest.raises(ValidationError):
        models.PaymentCreate(amount=10.0, entity="ent_1")  # type: ignore[arg-type]


def test_create_models_refuse_unknown_fields():
    with pytest.raises(ValidationError):
        models.EntityCreate.model_validate({"name": "A", "type": "llc", "nmae": "typo"})


def test_entity_payment_instruction_ids_accept_a_list_envelope():
    epi = models.EntityPaymentInstructions.model_validate(
        {
            "entity": "ent_1",
            "payment_instructions": {"object": "list", "data": ["pmi_1", {"id": "pmi_2"}]},
        }
    )
    assert epi.payment_instructions == ["pmi_1", "pmi_2"]


# --- pagination ------------------------------------------------------------------------------


def vehicle(i: int) -> dict[str, object]:
    return {
        "object": "vehicle",
        "id": f"veh_{i}",
        "name": f"V{i}",
        "created_at": "2026-01-01T00:00:00Z",
    }


async def test_financial_account_filter_survives_pagination(client, service):
    fa = {
        "id": "fa_1",
        "vehicle": "veh_1",
        "balance": {"total": 1, "available": 1, "total_end_of_last_month": 1, "currency": "USD"},
    }
    route = service.get("/v1/financial_accounts").mock(
        side_effect=[
            httpx.Response(
                200, json=envelope([fa], "/v1/financial_accounts?limit=100&page=page_2")
            ),
            httpx.Response(200, json=envelope([fa], None)),
        ]
    )
    accounts = await client.list_financial_accounts(ids=["fa_1", "fa_2"]).to_list()
    assert len(accounts) == 2
    assert route.calls[0].request.url.params.get_list("ids") == ["fa_1", "fa_2"]
    assert route.calls[1].request.url.params.get_list("ids") == ["fa_1", "fa_2"]
    assert route.calls[1].request.url.params["page"] == "page_2"


async def test_pagination_never_sends_the_token_to_another_host(client, service):
    service.get("/v1/vehicles").mock(
        return_value=httpx.Response(
            200, json=envelope([vehicle(1)], "https://evil.example/v1/vehicles?page=page_2")
        )
    )
    other = service.get("https://evil.example/v1/vehicles")
    with pytest.raises(errors.ResponseDecodeError, match="another origin"):
        await client.list_vehicles().to_list()
    assert other.call_count == 0


async def test_absolute_same_origin_next_page_url_is_followed(client, service):
    service.get("/v1/vehicles").mock(
        side_effect=[
            httpx.Response(200, json=envelope([vehicle(1)], f"{BASE_URL}/v1/vehicles?page=page_2")),
            httpx.Response(200, json=envelope([vehicle(2)], None)),
        ]
    )
    assert [v.id for v in await client.list_vehicles().to_list()] == ["veh_1", "veh_2"]


# --- configuration safety --------------------------------------------------------------------


@pytest.mark.parametrize("url", ["http://fund.example.com", "ftp://fund.example.com", "not a url"])
def test_insecure_or_invalid_service_urls_are_refused(url):
    with pytest.raises(errors.ConfigurationError):
        FundClient(make_settings(base_url=url).client_config())


def test_plain_http_token_url_to_a_remote_host_is_refused():
    with pytest.raises(errors.ConfigurationError, match="TOKEN_URL"):
        FundClient(make_settings(token_url="http://auth.example.com").client_config())


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000",
        "http://localhost:8000",
        "http://[::1]:8000",
        "https://fund.example.com",
    ],
)
async def test_loopback_http_and_https_are_accepted(url):
    client = FundClient(make_settings(base_url=url).client_config())
    await client.aclose()


def test_missing_base_url_or_credentials_is_a_configuration_error():
    with pytest.raises(errors.ConfigurationError, match="FUNDPIPE_BASE_URL"):
        FundClient(make_settings(base_url=None).client_config())
    with pytest.raises(errors.ConfigurationError, match="CLIENT_SECRET"):
        FundClient(make_settings(client_secret=None).client_config())


def test_retry_after_parsing():
    from fundpipe.client._retry import parse_retry_after

    now = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
    assert parse_retry_after("3", now) == 3.0
    assert parse_retry_after("Mon, 23 Nov 2026 12:00:10 GMT", now) == 10.0
    assert parse_retry_after("Mon, 23 Nov 2026 11:00:00 GMT", now) == 0.0
    assert parse_retry_after("soon", now) is None
    assert parse_retry_after(None, now) is None
    assert parse_retry_after("-5", now.astimezone(timezone(timedelta(hours=2)))) == 0.0


def test_full_jitter_stays_within_the_exponential_ceiling():
    import random

    from fundpipe.client._retry import RetryPolicy

    policy = RetryPolicy(
        max_attempts=6,
        deadline_s=60,
        backoff_initial_s=0.2,
        backoff_max_s=1.0,
        retry_after_cap_s=5,
        rng=random.Random(7),
    )
    samples = {n: [policy.jitter(n) for _ in range(200)] for n in (1, 2, 3, 6)}
    assert all(0 <= s <= 0.2 for s in samples[1])
    assert all(0 <= s <= 0.4 for s in samples[2])
    assert max(samples[3]) > 0.4  # the ceiling grows...
    assert all(0 <= s <= 1.0 for s in samples[6])  # ...up to backoff_max_s
    assert min(samples[6]) < 0.2  # full jitter: can be close to zero


@pytest.fixture(scope="module")
def tls_certificate(tmp_path_factory) -> tuple[str, str]:
    """A self-signed certificate (and key) for the address 127.0.0.1 only, as PEM files."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fundpipe test service")])
    # OpenSSL checks the validity on the machine's own clock, not the test's: valid on any day
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(datetime(2000, 1, 1, tzinfo=UTC))
        .not_valid_after(datetime(2100, 1, 1, tzinfo=UTC))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    folder = tmp_path_factory.mktemp("tls")
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return str(cert_file), str(key_file)


@pytest.fixture
async def tls_service(tls_certificate) -> AsyncIterator[int]:
    """A TLS server on 127.0.0.1 answering every request with a token-and-vehicle JSON body."""
    import asyncio
    import json
    import ssl

    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(*tls_certificate)
    body = json.dumps({"access_token": "t", "expires_in": 3600, "id": "veh_1"}).encode()

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while (head := await reader.readuntil(b"\r\n\r\n")) is not None:
                length = 0
                for line in head.decode("latin-1").split("\r\n"):
                    if line.lower().startswith("content-length:"):
                        length = int(line.split(":", 1)[1])
                await reader.readexactly(length)
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    + f"Content-Length: {len(body)}\r\n\r\n".encode()
                    + body
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0, ssl=context)
    async with server:
        yield server.sockets[0].getsockname()[1]


async def test_tls_certificates_are_verified_against_the_trust_store(tls_service):
    settings = make_settings(base_url=f"https://127.0.0.1:{tls_service}", max_attempts=1)
    async with FundClient(settings.client_config()) as client:
        with pytest.raises(errors.ServiceConnectionError) as info:
            await client.get_vehicle("veh_1")
    assert "CERTIFICATE_VERIFY_FAILED" in str(info.value.__cause__)


async def test_a_ca_bundle_replaces_the_trust_store_and_host_names_are_still_checked(
    tls_service, tls_certificate
):
    bundle = tls_certificate[0]
    trusted = make_settings(base_url=f"https://127.0.0.1:{tls_service}", ca_bundle=bundle)
    async with FundClient(trusted.client_config()) as client:
        assert (await client.get_vehicle("veh_1")).id == "veh_1"
    # The certificate names 127.0.0.1 only: the same server reached as localhost is refused.
    renamed = make_settings(
        base_url=f"https://localhost:{tls_service}", ca_bundle=bundle, max_attempts=1
    )
    async with FundClient(renamed.client_config()) as client:
        with pytest.raises(errors.ServiceConnectionError) as info:
            await client.get_vehicle("veh_1")
    assert "CERTIFICATE_VERIFY_FAILED" in str(info.value.__cause__)
    assert "Hostname mismatch" in str(info.value.__cause__)
