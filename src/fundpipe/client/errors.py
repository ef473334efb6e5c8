"""The client's exception tree (see `fundpipe.client._errors` for the tree and the mapping).

```
FundServiceError
├── ConfigurationError
├── ServiceConnectionError                       retryable
│   └── ServiceOutageError                       failures outlasted the retry deadline
├── ResponseDecodeError
├── IncompleteListError                          has_more without next_page_url
└── APIError
    ├── InvalidRequestError          400
    │   └── InvalidScopeError        400         token endpoint `invalid_scope`
    ├── AuthenticationError          401
    ├── PermissionDeniedError        403
    │   └── MissingScopeError        403         `scope` names the missing scope
    ├── NotFoundError                404
    ├── OperationUnavailableError    404/405/501 a guessed (optional) operation is not served
    ├── RequestTimeoutError          408         retryable
    ├── ConflictError                409         retryable (code `conflict`)
    │   └── AlreadyExistsError       409         fatal; `conflicts_with` ids of the existing
    ├── IdempotencyMismatchError     409 or 422  fatal (code `idempotency_mismatch`)
    ├── UnprocessableEntityError     422
    ├── RateLimitError               429         retryable
    └── APIServerError               5xx         retryable: 500, 502, 503, 504
```
"""

from fundpipe.client._error_map import error_class_for, error_from_response
from fundpipe.client._errors import (
    AlreadyExistsError,
    APIError,
    APIServerError,
    AuthenticationError,
    ConfigurationError,
    ConflictError,
    FundServiceError,
    IdempotencyMismatchError,
    IncompleteListError,
    InvalidParam,
    InvalidRequestError,
    InvalidScopeError,
    MissingScopeError,
    NotFoundError,
    OperationUnavailableError,
    PermissionDeniedError,
    RateLimitError,
    RequestTimeoutError,
    ResponseDecodeError,
    ServiceConnectionError,
    ServiceOutageError,
    UnprocessableEntityError,
)

__all__ = [
    "APIError",
    "APIServerError",
    "AlreadyExistsError",
    "AuthenticationError",
    "ConfigurationError",
    "ConflictError",
    "FundServiceError",
    "IdempotencyMismatchError",
    "IncompleteListError",
    "InvalidParam",
    "InvalidRequestError",
    "InvalidScopeError",
    "MissingScopeError",
    "NotFoundError",
    "OperationUnavailableError",
    "PermissionDeniedError",
    "RateLimitError",
    "RequestTimeoutError",
    "ResponseDecodeError",
    "ServiceConnectionError",
    "ServiceOutageError",
    "UnprocessableEntityError",
    "error_class_for",
    "error_from_response",
]
