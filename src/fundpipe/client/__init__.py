"""The Fund Distribution Service client: the only code in fundpipe that speaks HTTP to it.

```python
async with FundClient(settings.client_config()) as client:   # a ClientConfig
    created = await client.create_distributions([...])      # deterministic Idempotency-Key
    async for account in client.list_financial_accounts():   # lazy pagination
        ...
```

Public surface: `FundClient`, `ClientConfig` and its `HttpPolicy`, `DEFAULT_PATHS`, `Paginator`,
`Page`, `RateGate`, `idempotency_key`, `canonical_json`, `redact`, the models in
`fundpipe.client.models` and the errors in `fundpipe.client.errors`.
"""

from fundpipe.client import errors, models
from fundpipe.client._client import DEFAULT_PAGE_SIZE, FundClient
from fundpipe.client._config import DEFAULT_PATHS, ClientConfig, HttpPolicy
from fundpipe.client._errors import FundServiceError
from fundpipe.client._idempotency import KEY_PREFIX, canonical_json, idempotency_key
from fundpipe.client._pagination import Page, Paginator
from fundpipe.client._ratelimit import RateGate
from fundpipe.client._redact import REDACTED, redact

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "DEFAULT_PATHS",
    "KEY_PREFIX",
    "REDACTED",
    "ClientConfig",
    "FundClient",
    "FundServiceError",
    "HttpPolicy",
    "Page",
    "Paginator",
    "RateGate",
    "canonical_json",
    "errors",
    "idempotency_key",
    "models",
    "redact",
]
