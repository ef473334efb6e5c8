"""The client's exception tree (see `fundpipe.client._errors` for the tree and the mapping).

```
FundServiceError
├── ConfigurationError
├── ServiceConnectionError                       retryable
├── ResponseDecodeError
└── APIError
    ├── InvalidRequestError          400
    ├── AuthenticationError          401
    ├── PermissionDeniedError        403
    ├── NotFoundError                404
    ├── RequestTimeoutError          408         retryable
    ├── ConflictError                409         retryable (code `conflict`)
    ├── IdempotencyMismatchError     409 or 422  fatal (code `idempotency_mismatch`)
    ├── UnprocessableEntityError     422
    ├── RateLimitError               429         retryable
    └── APIServerError               5xx         retryable: 500, 502, 503, 504
```
"""

from fundpipe.client._errors import (
    APIError,
    APIServerError,
    AuthenticationError,
    ConfigurationError,
    ConflictError,
    FundServiceError,
    IdempotencyMismatchError,
    InvalidParam,
    InvalidRequestError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    RequestTimeoutError,
    ResponseDecodeError,
    ServiceConnectionError,
    UnprocessableEntityError,
    error_class_for,
    error_from_response,
)

__all__ = [
    "APIError",
    "APIServerError",
    "AuthenticationError",
    "ConfigurationError",
    "ConflictError",
    "FundServiceError",
    "IdempotencyMismatchError",
    "InvalidParam",
    "InvalidRequestError",
    "NotFoundError",
    "PermissionDeniedError",
    "RateLimitError",
    "RequestTimeoutError",
    "ResponseDecodeError",
    "ServiceConnectionError",
    "UnprocessableEntityError",
    "error_class_for",
    "error_from_response",
]
