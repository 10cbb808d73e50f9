"""The environment variables a Stalwart worker reads for itself: the one list of them.

An agent file may name environment variables (`api_key_env`, `auth_token_env`, `${NAME}` in an MCP
server's `headers` and `env`) and the worker sends their values to a URL or a command of the file's
choosing. The worker's own settings must never be among them, whatever `STALWART_ALLOWED_ENV` says:
they hold its encryption keys, its storage and Temporal credentials and its tokens. `activities/secrets.py`
refuses every name this module lists, and redacts the values of the secret ones from a worker's first
activity on.

Adding a setting the worker reads adds it here (a name, or a prefix it shares with its family);
tests/test_secrets.py fails when the package reads a `STALWART_*`, `TEMPORAL_*`, `AWS_*` or
`OTEL_*` name this list does not cover.
"""

from __future__ import annotations

from collections.abc import Mapping

NAMES: Mapping[str, str] = {
    "STALWART_ALLOWED_ENV": "which variables agent files may read",
    "STALWART_ENCRYPTION_KEYS": "payload encryption keys",
    "STALWART_ENCRYPTION_KEY_FILE": "file of payload encryption keys",
    "STALWART_STORAGE": "where large payloads and transcripts are stored",
    "STALWART_S3_ENDPOINT_URL": "the S3 endpoint of the storage",
    "STALWART_STORAGE_THRESHOLD_BYTES": "payload size kept in storage",
    "STALWART_CODEC_TOKEN": "the codec server's bearer token",
    "STALWART_CODEC_ORIGINS": "the codec server's allowed origins",
    "STALWART_PRICES": "model prices file",
    "STALWART_HTTP_ALLOWED_HOSTS": "hosts the http_get tool may fetch",
    "STALWART_HTTP_MAX_BYTES": "http_get's size limit",
    "STALWART_FILES_ROOT": "the folder read_file may read",
    "STALWART_FILES_MAX_BYTES": "read_file's size limit",
    "STALWART_METRICS_PORT": "the Prometheus port",
    "STALWART_DEPLOYMENT_NAME": "the worker deployment",
    "STALWART_BUILD_ID": "the worker's build id",
    "STALWART_VERSIONING_BEHAVIOR": "the worker's versioning behaviour",
    "STALWART_STREAM": "whether the worker pushes streamed text to clients",
    "DEBUG_MOCK_RESPONSES": "the scripted model's replies, as JSON actions",
    "XDG_DATA_HOME": "default local storage folder",
    "XDG_STATE_HOME": "where the CLI remembers the UI address",
    "HTTP_PROXY": "the HTTP clients' proxy (may hold credentials)",
    "HTTPS_PROXY": "the HTTP clients' proxy (may hold credentials)",
    "ALL_PROXY": "the HTTP clients' proxy (may hold credentials)",
    "NO_PROXY": "hosts reached without the proxy",
    "SSL_CERT_FILE": "trusted certificates",
    "SSL_CERT_DIR": "trusted certificates",
    "REQUESTS_CA_BUNDLE": "trusted certificates",
}
"""Settings the worker reads by exact name, and what each is for (said in a refusal)."""

PREFIXES: Mapping[str, str] = {
    "STALWART_ENCRYPTION_": "payload encryption",
    "STALWART_S3_": "the storage's S3 settings",
    "STALWART_STORAGE_": "the storage",
    "STALWART_CODEC_": "the codec server",
    "STALWART_SERVE_": "the servers Stalwart runs",
    "STALWART_STREAM_": "the worker's stream broker (its host and port)",
    "TEMPORAL_": "the Temporal cluster connection (address, API key, TLS key, gRPC headers)",
    "AWS_": "the storage's S3 credentials",
    "OTEL_": "telemetry export (its headers may hold credentials)",
    "GRPC_": "the Temporal connection's gRPC settings",
    "OPENAI_": "the OpenAI SDK's settings",
    "ANTHROPIC_": "the Anthropic SDK's settings",
}
"""Families of settings the worker, its SDKs or its storage driver read, by prefix."""

SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "HEADERS", "META")
"""A setting whose name holds one of these carries a secret: its value is redacted from the worker's first activity."""
SECRET_NAMES = frozenset({"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"})
"""Secret settings no word gives away: a proxy URL may carry a user and password."""

PUBLIC_SUFFIXES = ("_ID",)
"""Names of identifiers, not secrets (`AWS_ACCESS_KEY_ID`): often an ordinary word, which redaction would hide
wherever it appears (the compose stack's MinIO user is `stalwart`)."""
FILE_SUFFIXES = ("_FILE", "_PATH")
"""A secret setting that names a file (a key file, a TLS key): the file's content is the secret."""


def setting_of(name: str) -> str | None:
    """What the worker reads `name` for, when it is one of its own settings (any case: some are read so)."""
    upper = name.upper()
    if upper in NAMES:
        return NAMES[upper]
    return next((what for prefix, what in PREFIXES.items() if upper.startswith(prefix)), None)


def is_secret(name: str) -> bool:
    """Whether the setting `name` holds (or names a file holding) something to keep out of every output."""
    upper = name.upper()
    if upper.endswith(PUBLIC_SUFFIXES):
        return False
    return upper in SECRET_NAMES or (setting_of(name) is not None and any(word in upper for word in SECRET_WORDS))
