"""The finance desk: a web application over the same library and durable record as the CLI
(`fundpipe desk`), so a decision made on either is the same decision.

```python
app = create_app(Desk(settings, DeskSettings()))   # an ASGI app; `fundpipe desk` serves it
```

Server-rendered pages (FastAPI, Jinja2, one style sheet, no script), every organization's
under ``/orgs/{org_id}/…``. One private module per concern:

- `_config`: the desk's settings (`FUNDPIPE_DESK_*`) and its folder, ``<data_dir>/desk/``;
- `_accounts`: local accounts (argon2id), the sign-in throttle, the first admin's link;
- `_members`: members and roles from `FUNDPIPE_DESK_MEMBERS`, and each role's rights;
- `_session`: the signed session cookie, the CSRF token, the security headers;
- `_oidc`: sign-in through an OpenID Connect provider;
- `_log`: the desk's own log;
- `_reading`: what the pages read and do, through `fundpipe.reconcile.lifecycle` and
  `fundpipe.orgs`;
- `_queue`: the morning and the exception queue; `_recon`: the reconciliation's pages and
  downloads (each an APIRouter in `_app.ROUTERS`);
- `_app`: the routes.

It sits on top of the library, below `fundpipe.app` (whose CLI starts it).
"""

from fundpipe.desk._accounts import Accounts
from fundpipe.desk._app import create_app
from fundpipe.desk._config import Desk, DeskSettings
from fundpipe.desk._members import RIGHTS, Right, Role

__all__ = ["RIGHTS", "Accounts", "Desk", "DeskSettings", "Right", "Role", "create_app"]
